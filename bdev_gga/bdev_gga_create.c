/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Creation of a gga bdev (app thread): check the options, open and claim the
 * bases, check they agree with each other and fit the format, read their
 * superblocks, and then format them (zero the data areas, write new
 * superblocks), assemble them (check every superblock against the array,
 * persist the next generation window) or refuse without writing anything.
 * Every step is asynchronous; a failure at any step releases everything and
 * reports a sentence that names the member and the problem.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gga/bdev_module.h"
#include "gga/log.h"
#include "gga/util.h"
#include "gga/uuid.h"

#include "bdev_gga_bitmap.h"
#include "bdev_gga_channel.h"
#include "bdev_gga_fanout.h"
#include "bdev_gga_front.h"
#include "bdev_gga_member.h"
#include "bdev_gga_module.h"
#include "bdev_gga_remove.h"
#include "bdev_gga_sb.h"
#include "gga_lifecycle.h"

/* gga bdevs being created, so that a second create of the same name is refused. */
static TAILQ_HEAD(, gga_disk) g_creating = TAILQ_HEAD_INITIALIZER(g_creating);

struct gga_create_ctx {
	struct gga_disk *disk;
	bdev_gga_create_cb cb;
	void *cb_arg;
	enum bdev_gga_mode mode;
	bool force;
	bool uuid_set;
	bool matrix_set;
	uint8_t uuid[16];
	/* n regions of region_len bytes: superblock reads, then the writes. */
	uint8_t *region;
	size_t region_len;
	int sb_rc[BDEV_GGA_MAX_MEMBERS];
	struct gga_sb sb[BDEV_GGA_MAX_MEMBERS];
	/*
	 * The member I/O of the step under way (superblock reads, zeroing,
	 * the writes of the reserved regions): a member that fails it, refuses
	 * it or has no bdev_io for it fails the creation (no member is failed:
	 * none is one yet).
	 */
	struct gga_fanout fo;
	/* Zeroing at format: members written with plain zeros, next block of each. */
	uint8_t *zero_buf;
	uint64_t zero_next[BDEV_GGA_MAX_MEMBERS];
	bool format;
	bool creating_listed;
	uint64_t epoch;
	/* The record the new superblocks carry (its count among it), as the module issued it. */
	struct gga_lc_record lc_rec;
	/* Assembly: the freshest superblock's member, and the union of the bitmaps. */
	int fresh;
	/* Assembly: members whose base bdev does not exist (yet). */
	uint32_t absent;
	uint8_t *bitmap;
	uint32_t region_shift; /* requested (format) */
	/*
	 * A front of a shared array: the bdev was registered (gated) before the
	 * members were read, and creation goes on once this front holds them.
	 */
	bool early;
	/*
	 * A front: the members' absent mask, states and reasons before its first
	 * assembly, restored for another try when one fails (create_front_again).
	 */
	uint32_t open_absent;
	uint32_t open_state[BDEV_GGA_MAX_MEMBERS];
	const char *open_reason[BDEV_GGA_MAX_MEMBERS];
	/*
	 * A front that waits for members (wait_for_members): front_busy while
	 * an assembly of it is under way; between them, every CREATE_RETRY_TICKS,
	 * the bases of absent members that appeared are opened (reopened: the
	 * members so opened, whose channels the bdev's channels lack).
	 */
	bool front_busy;
	uint32_t reopened;
	/*
	 * Waiting for members (opts wait_for_members): `wait` allows it; may_wait
	 * is the module's word on the last refusal (gga_lc_assemble_may_wait());
	 * `waiting` once the bdev is registered and the assembly is retried
	 * every CREATE_RETRY_TICKS (busy while an attempt is under way).
	 */
	bool wait;
	bool may_wait;
	/*
	 * The members' geometry given to create (opts member_block_size etc.,
	 * geo_set if given): the members must match it, and a waiting bdev none
	 * of whose members exists is registered from it.
	 */
	bool geo_set;
	uint32_t geo_bs;
	uint32_t geo_md;
	uint64_t geo_blocks;
	bool waiting;
	bool busy;
	uint32_t ticks;
	/*
	 * Members whose base bdev exists but whose superblock read failed or
	 * stalled (member_timeout_ms): left out, absent (in `absent` too) as
	 * the module has them, and probed again once the array runs.
	 */
	uint32_t left_out;
	uint32_t stalled;
	/* Members whose assembly write failed while k others took it: failed once it runs. */
	uint32_t write_failed;
	/* Why an absent member could not be opened on the last attempt (NULL: no base bdev). */
	const char *why[BDEV_GGA_MAX_MEMBERS];
	/* The module's view of the assembly (assemble_states()). */
	struct gga_lc_view lc_view;
	/*
	 * The watch over the creation's member I/O (gga_app_watch_round(), every
	 * CREATE_POLL_US) and the retries of a waiting assembly. A step whose
	 * I/O ended while a reset the watch sent is still in flight goes on
	 * (after_resets) once the resets are over.
	 */
	struct poller *poller;
	void (*after_resets)(struct gga_create_ctx *ctx);
#ifdef GGA_TEST_HOOKS
	/* test_gga_assembly_delay: the front's superblock reads wait for this one-shot poller. */
	struct poller *test_delay;
#endif
	int rc;
	char msg[512];
};

/* The creation's watch runs every 100 ms; a waiting assembly is retried every second. */
#define CREATE_POLL_US     (100u * 1000u)
#define CREATE_RETRY_TICKS 10u

static void create_set_msg(struct gga_create_ctx *ctx, int rc, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
static void create_wait_again(struct gga_create_ctx *ctx);
static int create_wait_start(struct gga_create_ctx *ctx);
static void create_read_done(struct gga_fanout *fo);
static const struct gga_fanout_ops create_read_fanout;

static void
create_set_msg(struct gga_create_ctx *ctx, int rc, const char *fmt, ...)
{
	va_list ap;

	ctx->rc = rc;
	va_start(ap, fmt);
	vsnprintf(ctx->msg, sizeof(ctx->msg), fmt, ap);
	va_end(ap);
}

/* The context's own buffers, and the context. */
static void
create_ctx_free(struct gga_create_ctx *ctx)
{
	poller_unregister(&ctx->poller);
#ifdef GGA_TEST_HOOKS
	poller_unregister(&ctx->test_delay);
#endif
	env_dma_free(ctx->region);
	env_dma_free(ctx->zero_buf);
	free(ctx->bitmap);
	free(ctx);
}

static void
create_release(struct gga_create_ctx *ctx)
{
	struct gga_disk *disk = ctx->disk;
	uint32_t i;

	if (disk != NULL) {
		for (i = 0; i < disk->n; i++) {
			gga_member_close(&disk->members[i]);
		}
		if (ctx->creating_listed) {
			TAILQ_REMOVE(&g_creating, disk, link);
		}
		gga_front_shell_free(disk, disk->front);
		gga_disk_free(disk);
	}
	create_ctx_free(ctx);
}

/* The context of an early-registered disk goes; the disk stays. */
static void
create_early_end(struct gga_create_ctx *ctx)
{
	struct gga_disk *disk = ctx->disk;

	create_ctx_free(ctx);
	disk->pending_ops--;
	if (disk->destructing) {
		gga_disk_try_free(disk);
	}
}

/* Creation failed: release everything, then tell the caller. */
static void
create_fail(struct gga_create_ctx *ctx)
{
	bdev_gga_create_cb cb = ctx->cb;
	void *cb_arg = ctx->cb_arg;
	char msg[sizeof(ctx->msg)];
	int rc = ctx->rc;

	if (ctx->waiting) {
		/* Registered and waiting: this attempt did not assemble; the next may. */
		create_wait_again(ctx);
		return;
	}
	if (ctx->may_wait && create_wait_start(ctx) == 0) {
		return;
	}
	if (ctx->early) {
		/*
		 * The bdev is registered and stays, inaccessible: the front says why,
		 * and assembles again later unless the bdev is going.
		 */
		if (gga_front_shell_assembled(ctx->disk, rc, ctx->msg)) {
			ctx->front_busy = false;
			return;
		}
		create_early_end(ctx);
		return;
	}
	if (ctx->disk != NULL && ctx->disk->bdev.name != NULL) {
		ERRLOG("gga bdev '%s': %s\n", ctx->disk->bdev.name, ctx->msg);
	} else {
		ERRLOG("gga bdev: %s\n", ctx->msg);
	}
	memcpy(msg, ctx->msg, sizeof(msg));
	create_release(ctx);
	cb(cb_arg, NULL, rc, msg);
}

static void
create_fail_msg(void *arg)
{
	create_fail(arg);
}

/* A failure found inside bdev_gga_create(): report it from a fresh message. */
static int
create_fail_async(struct gga_create_ctx *ctx)
{
	if (thread_send_msg(thread_get_current(), create_fail_msg, ctx) != 0) {
		ERRLOG("gga bdev: %s\n", ctx->msg);
		create_release(ctx);
		return -ENOMEM;
	}
	return 0;
}

/* Any base removed while creation waited for I/O? */
static bool
create_check_removed(struct gga_create_ctx *ctx)
{
	struct gga_disk *disk = ctx->disk;
	char label[160];
	uint32_t i;

	if ((ctx->early || ctx->waiting) && disk->destructing) {
		create_set_msg(ctx, -ENODEV, "the bdev was deleted during assembly");
		return true;
	}
	for (i = 0; i < disk->n; i++) {
		if (disk->members[i].removing && !(ctx->absent & (1u << i))) {
			create_set_msg(ctx, -ENODEV, "%s was removed during creation",
				       gga_member_label(disk, i, label, sizeof(label)));
			return true;
		}
	}
	return false;
}

/*
 * The members whose assembly write failed while k others took it: failed now
 * that the array runs, like any member whose record write fails; the next
 * update records them out of sync, and no write they missed is acknowledged
 * before it lands (the durable word says they are in sync until then).
 */
static void
create_fail_unwritten(struct gga_disk *disk, uint32_t write_failed)
{
	uint32_t i;

	for (i = 0; i < disk->n; i++) {
		if (write_failed & (1u << i)) {
			gga_member_fail(disk, i, "its superblock write failed at assembly");
		}
	}
}

/* A waiting bdev is assembled: its channels get the members opened since. */
static void
create_attach_channel(struct io_channel_iter *it)
{
	struct gga_create_ctx *ctx = io_channel_iter_get_ctx(it);
	struct gga_channel *ch = io_channel_get_ctx(io_channel_iter_get_channel(it));
	struct gga_disk *disk = ctx->disk;
	struct gga_member *member;
	uint32_t i;

	for (i = 0; i < disk->n; i++) {
		member = &disk->members[i];
		if (ch->member_ch[i] == NULL && member->desc != NULL && !member->removing) {
			ch->member_ch[i] = bdev_get_io_channel(member->desc);
		}
	}
	io_channel_iter_continue(it, 0);
}

static void create_wait_end(struct gga_create_ctx *ctx);

static void
create_attach_done(struct io_channel_iter *it, int status)
{
	struct gga_create_ctx *ctx = io_channel_iter_get_ctx(it);
	struct gga_disk *disk = ctx->disk;
	char uuid[UUID_STR_LEN];

	if (disk->destructing) {
		create_wait_end(ctx);
		return;
	}
	uuid_format(disk->array_uuid, uuid);
	NOTICELOG("gga bdev '%s': assembled array %s (%u + %u, %" PRIu64 " blocks of %u bytes, "
		  "generations from %" PRIu64 ") once enough members answered; serving\n",
		  disk->bdev.name, uuid, disk->k, disk->m, disk->bdev.num_blocks, disk->block_size,
		  disk->next_gen);
	gga_disk_start(disk);
	__atomic_store_n(&disk->waiting, false, __ATOMIC_RELEASE);
	disk->wait_msg[0] = '\0';
	bdev_notify_access_changed(&disk->bdev);
	bdev_notify_health_changed(&disk->bdev);
	create_fail_unwritten(disk, ctx->write_failed);
	create_wait_end(ctx);
}

/* A front's assembly is on disk: it starts, and serves once the shell says so. */
static void
create_front_finish(struct gga_create_ctx *ctx)
{
	struct gga_disk *disk = ctx->disk;
	char uuid[UUID_STR_LEN];

	uuid_format(disk->array_uuid, uuid);
	NOTICELOG("gga bdev '%s': %s array %s (%u + %u, %" PRIu64 " blocks of %u bytes, "
		  "generations from %" PRIu64 ") as the active front\n",
		  disk->bdev.name, ctx->format ? "formatted" : "assembled", uuid, disk->k, disk->m,
		  disk->bdev.num_blocks, disk->block_size, disk->next_gen);
	gga_disk_start(disk);
	gga_front_shell_assembled(disk, 0, "");
	create_fail_unwritten(disk, ctx->write_failed);
	create_early_end(ctx);
}

static void
create_front_attach_done(struct io_channel_iter *it, int status)
{
	(void)status;
	create_front_finish(io_channel_iter_get_ctx(it));
}

/* Everything is on disk: make the bdev. */
static void
create_finish(struct gga_create_ctx *ctx)
{
	struct gga_disk *disk = ctx->disk;
	bdev_gga_create_cb cb = ctx->cb;
	void *cb_arg = ctx->cb_arg;
	char uuid[UUID_STR_LEN], label[160];
	struct gga_lc_durable durable;
	uint32_t i;
	int rc;

	if (create_check_removed(ctx)) {
		create_fail(ctx);
		return;
	}
	rc = gga_bitmap_create(disk, disk->region_shift, ctx->bitmap);
	if (rc != 0) {
		create_set_msg(ctx, rc, "out of memory for the write-intent bitmap");
		create_fail(ctx);
		return;
	}
	/* The superblocks just written say who is in sync. */
	disk->events = ctx->lc_rec.events;
	for (i = 0; i < disk->n; i++) {
		if (!((ctx->absent | ctx->write_failed) & (1u << i))) {
			disk->members[i].sb_events = ctx->lc_rec.events;
		}
	}
	/* The module made the absent and left-out members absent: it knows they are down. */
	disk->lc_failed = ctx->absent;
	durable.reached = disk->all_mask & ~ctx->absent & ~ctx->write_failed;
	durable.sync = disk->live_mask;
	durable.rec = disk->rec_mask;
	disk->persisted = gga_lc_durable_pack(&durable);
	if (ctx->early) {
		if (ctx->reopened != 0) {
			/* Channels opened before lack the members opened since. */
			io_device_for_each_channel(disk, create_attach_channel, ctx,
						   create_front_attach_done);
			return;
		}
		create_front_finish(ctx);
		return;
	}
	if (ctx->waiting) {
		/* Channels opened while it waited lack the members opened since. */
		io_device_for_each_channel(disk, create_attach_channel, ctx, create_attach_done);
		return;
	}
	/* The list entry is reused for the list of registered disks. */
	TAILQ_REMOVE(&g_creating, disk, link);
	ctx->creating_listed = false;
	rc = gga_disk_register(disk);
	if (rc == -ENOMEM) {
		create_set_msg(ctx, rc,
			       "cannot allocate I/O buffers (%u + %u elements); "
			       "is the memory arena large enough?",
			       GGA_SMALL_POOL_COUNT, GGA_LARGE_POOL_COUNT);
	} else if (rc != 0) {
		create_set_msg(ctx, rc, "registering the bdev failed: %s", strerror(-rc));
	}
	if (rc != 0) {
		create_fail(ctx);
		return;
	}
	for (i = 0; i < disk->n; i++) {
		if (ctx->absent & (1u << i)) {
			WARNLOG("gga bdev '%s': %s: base bdev does not exist; assembled without it "
				"(claimed and resynced when a bdev of that name appears)\n",
				disk->bdev.name, gga_member_label(disk, i, label, sizeof(label)));
		}
	}
	create_fail_unwritten(disk, ctx->write_failed);
	uuid_format(disk->array_uuid, uuid);
	NOTICELOG("gga bdev '%s': %s array %s (%u + %u, %s, %" PRIu64 " blocks of %u bytes, "
		  "generations from %" PRIu64 ")\n",
		  disk->bdev.name, ctx->format ? "formatted" : "assembled", uuid, disk->k, disk->m,
		  gga_matrix_name(disk->matrix), disk->bdev.num_blocks, disk->block_size,
		  disk->next_gen);
	ctx->disk = NULL;
	create_ctx_free(ctx);
	cb(cb_arg, &disk->bdev, 0, "");
}

/* A member's read or write of a creation step ended. */
static void
create_io_done(struct bdev_io *io, bool success, void *cb_arg)
{
	uint32_t i;
	struct gga_fanout *fo = gga_fanout_of(cb_arg, &i);

	bdev_free_io(io);
	if (success) {
		gga_fanout_ok(fo, i);
	} else {
		gga_fanout_fail(fo, i, NULL);
	}
	gga_fanout_put(fo);
}

/*
 * Did a member fail the step's I/O (or have no bdev_io for it)? Then the
 * creation fails, naming the first: "<what> <member> failed".
 */
static bool
create_step_failed(struct gga_create_ctx *ctx, const char *what)
{
	uint32_t failed = ctx->fo.fail_mask | ctx->fo.short_mask;
	char label[160];

	if (failed == 0) {
		return false;
	}
	create_set_msg(ctx, -EIO, "%s %s failed", what,
		       gga_member_label(ctx->disk, (uint32_t)__builtin_ctz(failed), label,
					sizeof(label)));
	create_fail(ctx);
	return true;
}

static bool create_hold_for_resets(struct gga_create_ctx *ctx,
				   void (*fn)(struct gga_create_ctx *ctx));

static void
create_write_end(struct gga_create_ctx *ctx)
{
	struct gga_fanout *fo = &ctx->fo;
	uint32_t failed = (ctx->disk->all_mask & ~ctx->absent) & ~fo->ok_mask;

	if (create_hold_for_resets(ctx, create_write_end)) {
		return;
	}
	/*
	 * Assembling: a member that failed (or stalled on) the write is left
	 * out if the module says k members it trusts took the records (rule 5).
	 */
	if (failed != 0 && !ctx->format && gga_lc_assembly_written(&ctx->lc_view, fo->ok_mask)) {
		ctx->write_failed = failed;
		create_finish(ctx);
		return;
	}
	fo->fail_mask |= failed;
	if (!create_step_failed(ctx, "writing the superblock region of")) {
		create_finish(ctx);
	}
}

static void
create_write_done(struct gga_fanout *fo)
{
	create_write_end(container_of(fo, struct gga_create_ctx, fo));
}

/* Read (create_read_fanout) or write member i's reserved region: its area of ctx->region. */
static int
create_region_submit(struct gga_fanout *fo, uint32_t i, void *cb_arg)
{
	struct gga_create_ctx *ctx = container_of(fo, struct gga_create_ctx, fo);
	struct gga_member *member = &ctx->disk->members[i];
	uint8_t *area = ctx->region + i * ctx->region_len;

	if (fo->ops == &create_read_fanout) {
		return bdev_read_blocks(member->desc, member->app_ch, area, 0,
					ctx->disk->data_offset, gga_fanout_app_io_done, cb_arg);
	}
	return bdev_write_blocks(member->desc, member->app_ch, area, 0, ctx->disk->data_offset,
				 gga_fanout_app_io_done, cb_arg);
}

/*
 * App thread I/O (app_io): watched by create_poll() for member_timeout_ms,
 * like the array's own superblock I/O once it runs. A failure fails no
 * member here (none is one yet): the step decides.
 */
static const struct gga_fanout_ops create_write_fanout = {
	.submit = create_region_submit,
	.done = create_write_done,
	.nomem = GGA_FANOUT_SKIP,
	.app = true,
};

/*
 * Write the prepared reserved regions: superblock, zeros, bitmap. Assembling
 * writes them whole too, which upgrades a version-1 member in place and
 * gives a blank member its region before it is rebuilt.
 */
static void
create_write_superblocks(struct gga_create_ctx *ctx)
{
	gga_fanout_start(&ctx->fo, &create_write_fanout, ctx->disk,
			 ctx->disk->all_mask & ~ctx->absent);
}

/* Member blocks per write when zeroing a member that has no write_zeroes. */
#define ZERO_CHUNK_BLOCKS 256u

/* Submit the next ZERO_CHUNK_BLOCKS of zeros to member i (no write_zeroes). */
static int create_zero_next(struct gga_create_ctx *ctx, uint32_t i, void *cb_arg);

static void
create_zero_io_done(struct bdev_io *io, bool success, void *cb_arg)
{
	uint32_t i;
	struct gga_fanout *fo = gga_fanout_of(cb_arg, &i);
	struct gga_create_ctx *ctx = container_of(fo, struct gga_create_ctx, fo);

	if (success && ctx->zero_next[i] < ctx->disk->member_blocks &&
	    (fo->fail_mask | fo->short_mask) == 0) {
		bdev_free_io(io);
		if (create_zero_next(ctx, i, cb_arg) == 0) {
			/* The next piece of a member zeroed by plain writes is on its way. */
			return;
		}
		gga_fanout_fail(fo, i, NULL);
		gga_fanout_put(fo);
		return;
	}
	create_io_done(io, success, cb_arg);
}

static int
create_zero_next(struct gga_create_ctx *ctx, uint32_t i, void *cb_arg)
{
	struct gga_disk *disk = ctx->disk;
	struct gga_member *member = &disk->members[i];
	uint64_t count = GGA_MIN((uint64_t)ZERO_CHUNK_BLOCKS,
				 disk->member_blocks - ctx->zero_next[i]);
	int rc;

	rc = bdev_write_blocks(member->desc, member->app_ch, ctx->zero_buf, ctx->zero_next[i],
			       count, create_zero_io_done, cb_arg);
	if (rc == 0) {
		ctx->zero_next[i] += count;
	}
	return rc;
}

static void
create_zero_done(struct gga_fanout *fo)
{
	struct gga_create_ctx *ctx = container_of(fo, struct gga_create_ctx, fo);

	if (!create_step_failed(ctx, "zeroing the data area of")) {
		create_write_superblocks(ctx);
	}
}

/*
 * Zero member i: write_zeroes where it has it (cheap on malloc), plain
 * writes of zeros otherwise, one piece after the other.
 */
static int
create_zero_submit(struct gga_fanout *fo, uint32_t i, void *cb_arg)
{
	struct gga_create_ctx *ctx = container_of(fo, struct gga_create_ctx, fo);
	struct gga_disk *disk = ctx->disk;
	struct gga_member *member = &disk->members[i];

	ctx->zero_next[i] = disk->member_blocks;
	if (bdev_io_type_supported(member->bdev, BDEV_IO_TYPE_WRITE_ZEROES)) {
		return bdev_write_zeroes_blocks(member->desc, member->app_ch, disk->data_offset,
						disk->member_blocks - disk->data_offset,
						create_zero_io_done, cb_arg);
	}
	if (ctx->zero_buf == NULL) {
		ctx->zero_buf = env_dma_zmalloc((size_t)ZERO_CHUNK_BLOCKS * disk->mbs, 0);
		if (ctx->zero_buf == NULL) {
			return -ENOMEM;
		}
	}
	ctx->zero_next[i] = disk->data_offset;
	return create_zero_next(ctx, i, cb_arg);
}

static const struct gga_fanout_ops create_zero_fanout = {
	.submit = create_zero_submit,
	.done = create_zero_done,
	.nomem = GGA_FANOUT_SKIP,
};

/*
 * Formatting leaves every data block of every member reading as zero data
 * and zero metadata (docs/FORMAT.md section 8): a blank superblock says
 * nothing about the rest of the member, and a reformatted member still holds
 * fragments of its old life.
 */
static void
create_zero_members(struct gga_create_ctx *ctx)
{
	gga_fanout_start(&ctx->fo, &create_zero_fanout, ctx->disk, ctx->disk->all_mask);
}

/* Describe why a member's superblock did not decode. */
static int
sb_problem(struct gga_create_ctx *ctx, uint32_t i)
{
	struct gga_disk *disk = ctx->disk;
	char label[160];
	int rc = ctx->sb_rc[i];

	gga_member_label(disk, i, label, sizeof(label));
	switch (rc) {
	case -EMEDIUMTYPE:
		create_set_msg(ctx, rc,
			       "%s holds data that is not a gga member (no gga superblock)", label);
		break;
	case -EPROTONOSUPPORT:
		create_set_msg(ctx, rc, "%s has a gga superblock of an unsupported format version",
			       label);
		break;
	case -EBADMSG:
		create_set_msg(ctx, rc, "%s has a damaged gga superblock (checksum mismatch)",
			       label);
		break;
	default:
		create_set_msg(ctx, -EUCLEAN, "%s has an inconsistent gga superblock", label);
		break;
	}
	return ctx->rc;
}

/* A member's state and reason as creation finds them (atomic: a waiting bdev is registered). */
static void
create_member_state(struct gga_member *member, enum bdev_gga_member_state state, const char *reason)
{
	__atomic_store_n(&member->reason, reason, __ATOMIC_RELEASE);
	__atomic_store_n(&member->state, state, __ATOMIC_RELEASE);
}

/*
 * Assembly: which members are trusted, which need what, and which recovery
 * checkpoint stands, as the lifecycle module decides it from the records found
 * (gga_lifecycle.c; docs/FORMAT.md 3.1 and "Member lifecycle"): the freshest
 * records, ties resolved toward the more degraded view, blank and absent
 * members and their checkpoint bits, old copies of a member, fewer than k
 * trusted refused with nothing written. Sets the members' states and needs,
 * disk->rec_mask, rec_offset and bitmap_events, and *in_sync.
 */
static int
assemble_states(struct gga_create_ctx *ctx, uint32_t formatted, uint32_t blank, uint32_t *in_sync)
{
	struct gga_disk *disk = ctx->disk;
	enum gga_lc_found found[GGA_LC_MAX_MEMBERS];
	struct gga_lc_record rec[GGA_LC_MAX_MEMBERS];
	const struct gga_lc_member *mb;
	struct gga_lc_actions act;
	struct gga_lc_view view;
	char uuid[UUID_STR_LEN];
	uint32_t i, trusted = 0;
	int rc;

	memset(rec, 0, sizeof(rec));
	for (i = 0; i < disk->n; i++) {
		if (ctx->absent & (1u << i)) {
			found[i] = GGA_LC_FOUND_ABSENT;
		} else if (blank & (1u << i)) {
			found[i] = GGA_LC_FOUND_BLANK;
		} else {
			/* create_validate() refused any other array's, role's or geometry's. */
			found[i] = (formatted & (1u << i)) ? GGA_LC_FOUND_RECORD :
							     GGA_LC_FOUND_FOREIGN;
			rec[i].events = ctx->sb[i].events;
			rec[i].bitmap_events = ctx->sb[i].bitmap_events;
			rec[i].rec_offset = ctx->sb[i].recovery_offset;
			rec[i].rec_mask = ctx->sb[i].recovery_mask;
			memcpy(rec[i].member_state, ctx->sb[i].member_state, disk->n);
		}
	}
	/* Auto re-add off: the module starts no pass, and drops a checkpoint none resumes. */
	rc = gga_lc_assemble(&view, disk->k, disk->m, NULL, found, rec,
			     disk->auto_readd ? 0 : disk->all_mask, &act);
	if (rc != 0) {
		for (i = 0; i < disk->n; i++) {
			trusted |= view.mb[i].run == GGA_LC_ONLINE ? 1u << i : 0;
		}
		uuid_format(disk->array_uuid, uuid);
		create_set_msg(
			ctx, rc == -EIO ? -EIO : -EUCLEAN,
			"only %d of %u members are in sync (members 0x%x: %s%s); at least %u "
			"are needed to assemble array %s",
			__builtin_popcount(trusted), disk->n, trusted, act.why,
			ctx->absent != 0 ? "; the others did not answer" : "", disk->k, uuid);
		/* Members only down: the module says whether their return could make k. */
		ctx->may_wait = ctx->wait && !ctx->early &&
				gga_lc_assemble_may_wait(&view, found, rc);
		return ctx->rc;
	}
	/*
	 * The assembly's update: the record and its count as the module issues
	 * them (rule 1), written whole to every member by create. The module's
	 * decision is taken as it stands: states, needs, checkpoint, and the pass
	 * it started, whose targets turn rebuilding when the disk starts and
	 * the walk carries it out (gga_recover_start_assembled()); no I/O
	 * reaches the disk before.
	 */
	gga_lc_issue(&view, &ctx->lc_rec);
	disk->bitmap_events = view.bitmap_events;
	disk->pass_targets = view.pass ? view.pass_targets : 0;
	disk->pass_rebuild = view.pass && view.pass_rebuild;
	disk->resume_ok = view.resume_ok;
	disk->rec_mask = 0;
	*in_sync = 0;
	for (i = 0; i < disk->n; i++) {
		struct gga_member *member = &disk->members[i];

		mb = &view.mb[i];
		if (mb->rec) {
			disk->rec_mask |= 1u << i;
		}
		member->needs = (enum gga_lc_needs)mb->needs;
		member->faulted = mb->faulted;
		if (mb->run == GGA_LC_ONLINE) {
			/* (A waiting bdev showed it stale until now.) */
			create_member_state(member, BDEV_GGA_MEMBER_ONLINE, NULL);
			*in_sync |= 1u << i;
			continue;
		}
		if (mb->run == GGA_LC_FAILED) {
			/* Faulted (the records say so): it waits for the operator. */
			create_member_state(member, BDEV_GGA_MEMBER_FAILED,
					    "faulted for errors: bdev_gga_clear_member or "
					    "bdev_gga_replace_member brings it back");
			continue;
		}
		if (mb->run == GGA_LC_ABSENT) {
			/* State ABSENT since create_open_members(); writes go on without it. */
			continue;
		}
		/* A target of the assembly's pass turns rebuilding when the pass starts. */
		create_member_state(
			member, BDEV_GGA_MEMBER_STALE,
			mb->blank ?
				"blank: needs a full rebuild" :
			ctx->sb[i].events < view.bitmap_events ?
				"its record is older than the write-intent bitmap: an old copy" :
			ctx->sb[i].events < ctx->sb[ctx->fresh].events &&
					ctx->sb[ctx->fresh].member_state[i] ==
						GGA_SB_MEMBER_IN_SYNC ?
				"its record is older than the freshest: resynced first" :
				"the superblocks say it missed writes");
	}
	ctx->lc_view = view;
	disk->rec_offset = disk->rec_mask != 0 ? view.rec_offset : 0;
	return 0;
}

/*
 * Assembling: check that every formatted member is this array's member in
 * its role, find the freshest superblock (the largest event counter: the
 * last word of the writers on who is in sync) and take the members' states
 * from it. Blank members are rebuilt; stale ones are never trusted.
 */
static int
create_validate(struct gga_create_ctx *ctx, uint32_t formatted, uint32_t blank)
{
	struct gga_disk *disk = ctx->disk;
	char label[160], role[16], why[256], uuid[UUID_STR_LEN], want_uuid[UUID_STR_LEN];
	const struct gga_sb *ref = &ctx->sb[__builtin_ctz(formatted)], *fresh;
	enum gga_sb_mismatch mm;
	struct gga_sb want;
	uint64_t epoch = 0;
	uint32_t i, in_sync = 0;
	int rc;

	if (ctx->uuid_set && memcmp(ref->array_uuid, ctx->uuid, 16) != 0) {
		uuid_format(ref->array_uuid, uuid);
		uuid_format(ctx->uuid, want_uuid);
		create_set_msg(ctx, -EEXIST,
			       "%s is a member of array %s, not of the requested array %s",
			       gga_member_label(disk, (uint32_t)__builtin_ctz(formatted), label,
						sizeof(label)),
			       uuid, want_uuid);
		return ctx->rc;
	}
	memcpy(disk->array_uuid, ref->array_uuid, 16);
	if (!ctx->matrix_set) {
		disk->matrix = ref->matrix;
	}
	ctx->fresh = -1;
	for (i = 0; i < disk->n; i++) {
		if (!(formatted & (1u << i))) {
			continue;
		}
		gga_member_label(disk, i, label, sizeof(label));
		if (ctx->sb[i].layout != GGA_LAYOUT_FIXED) {
			create_set_msg(ctx, -EINVAL,
				       "%s holds a member of a packed array, which this build does "
				       "not assemble yet",
				       label);
			return ctx->rc;
		}
		rc = gga_sb_init(&want, disk->array_uuid, i, disk->k, disk->m, disk->matrix,
				 disk->block_size, disk->md_size, disk->member_blocks);
		if (rc != 0) {
			create_set_msg(ctx, -EINVAL, "%s: this geometry cannot be formatted",
				       label);
			return ctx->rc;
		}
		mm = gga_sb_compare(&ctx->sb[i], &want, why, sizeof(why));
		uuid_format(ctx->sb[i].array_uuid, uuid);
		switch (mm) {
		case GGA_SB_MATCH:
			break;
		case GGA_SB_WRONG_ROLE:
			bdev_gga_role_name(ctx->sb[i].member_index, ctx->sb[i].k, ctx->sb[i].m,
					   role, sizeof(role));
			create_set_msg(ctx, -EEXIST,
				       "%s is the %s member of array %s (roles swapped?)", label,
				       role, uuid);
			return ctx->rc;
		case GGA_SB_OTHER_ARRAY:
			create_set_msg(ctx, -EEXIST, "%s belongs to another array: %s", label, why);
			return ctx->rc;
		default:
			if (ctx->sb[i].matrix != want.matrix) {
				create_set_msg(ctx, -EEXIST,
					       "%s was formatted with the %s matrix, not %s "
					       "(array %s)",
					       label, gga_matrix_name(ctx->sb[i].matrix),
					       gga_matrix_name(want.matrix), uuid);
				return ctx->rc;
			}
			create_set_msg(ctx, -EEXIST,
				       "%s was formatted with another geometry: %s "
				       "(array %s)",
				       label, why, uuid);
			return ctx->rc;
		}
		epoch = GGA_MAX(epoch, ctx->sb[i].generation_epoch);
		if (ctx->fresh < 0 || ctx->sb[i].events > ctx->sb[ctx->fresh].events) {
			ctx->fresh = (int)i;
		}
	}
	/* Every generation stamped so far is below the largest persisted window end. */
	ctx->epoch = epoch;
	fresh = &ctx->sb[ctx->fresh];
	if (fresh->version == GGA_SB_VERSION_1) {
		/* No bitmap yet: the requested region size, or the default that fits. */
		gga_sb_init(&want, disk->array_uuid, 0, disk->k, disk->m, disk->matrix,
			    disk->block_size, disk->md_size, disk->member_blocks);
		disk->region_shift = GGA_MAX(ctx->region_shift, want.region_shift);
		NOTICELOG("gga bdev '%s': upgrading the members' superblocks from format version 1 "
			  "to %d (event counter, member states, write-intent bitmap)\n",
			  disk->bdev.name, GGA_SB_VERSION_CURRENT);
	} else {
		disk->region_shift = fresh->region_shift;
	}
	disk->check_marked = true;
	rc = assemble_states(ctx, formatted, blank, &in_sync);
	if (rc != 0) {
		return rc;
	}
	disk->live_mask = in_sync;
	disk->write_mask = in_sync;
	return 0;
}

/* The union of the formatted members' bitmaps: every region any of them marked. */
static int
create_merge_bitmaps(struct gga_create_ctx *ctx, uint32_t formatted)
{
	struct gga_disk *disk = ctx->disk;
	uint32_t bytes = gga_bitmap_bytes(disk->frag_size),
		 off = gga_bitmap_offset(disk->frag_size);
	uint8_t *area;
	uint32_t i, j;

	ctx->bitmap = calloc(1, bytes);
	area = malloc(GGA_SB_REGION_BYTES);
	if (ctx->bitmap == NULL || area == NULL) {
		free(area);
		create_set_msg(ctx, -ENOMEM, "out of memory");
		return ctx->rc;
	}
	for (i = 0; i < disk->n; i++) {
		if (!(formatted & (1u << i)) || ctx->sb[i].version == GGA_SB_VERSION_1 ||
		    ctx->sb[i].region_shift != disk->region_shift) {
			continue;
		}
		gga_area_gather(disk, ctx->region + i * ctx->region_len, area, GGA_SB_REGION_BYTES);
		for (j = 0; j < bytes; j++) {
			ctx->bitmap[j] |= area[off + j];
		}
	}
	free(area);
	return 0;
}

_Static_assert(BDEV_GGA_MODE_AUTO == (int)GGA_LC_MODE_AUTO &&
		       BDEV_GGA_MODE_CREATE == (int)GGA_LC_MODE_CREATE &&
		       BDEV_GGA_MODE_ASSEMBLE == (int)GGA_LC_MODE_ASSEMBLE,
	       "enum bdev_gga_mode and enum gga_lc_mode differ");

/* Word a refusal of gga_lc_plan_create(): the message names plan->member. */
static void
create_refuse(struct gga_create_ctx *ctx, const struct gga_lc_plan *plan)
{
	struct gga_disk *disk = ctx->disk;
	char label[160], label2[160];

	gga_member_label(disk, plan->member, label, sizeof(label));
	switch (plan->why) {
	case GGA_LC_WHY_NOT_BLANK_RECORD:
	case GGA_LC_WHY_NOT_BLANK_DATA:
		create_set_msg(ctx, plan->rc,
			       "%s is not blank (%s); mode create needs blank "
			       "members, or force to overwrite them",
			       label,
			       plan->why == GGA_LC_WHY_NOT_BLANK_RECORD ?
				       "it holds a gga superblock" :
				       "it holds other data");
		break;
	case GGA_LC_WHY_OTHER_DATA:
		/* The member's own decode result says what it holds, and the errno. */
		sb_problem(ctx, plan->member);
		break;
	case GGA_LC_WHY_ABSENT_NEW:
		if (ctx->left_out & (1u << plan->member)) {
			create_set_msg(ctx, -EIO,
				       "%s: %s, and no member that answered holds a record of an "
				       "array",
				       label,
				       (ctx->stalled & (1u << plan->member)) ?
					       "no answer within member_timeout_ms" :
					       "reading its superblock failed");
			break;
		}
		create_set_msg(ctx, plan->rc,
			       "%s: base bdev does not exist; formatting a new "
			       "array needs all its members",
			       label);
		break;
	case GGA_LC_WHY_NOTHING_TO_ASSEMBLE:
		create_set_msg(ctx, plan->rc, "%s is blank: there is no array to assemble", label);
		break;
	case GGA_LC_WHY_TOO_FEW_FORMATTED:
		gga_member_label(disk, plan->member2, label2, sizeof(label2));
		create_set_msg(ctx, plan->rc,
			       "%s is formatted but %s and others are blank: fewer "
			       "than %u formatted members cannot be assembled (mode create with "
			       "force reformats all members)",
			       label, label2, disk->k);
		break;
	case GGA_LC_WHY_NONE:
	default:
		/* Not a refusal gga_lc_plan_create() makes. */
		create_set_msg(ctx, plan->rc, "%s: %s", label, strerror(-plan->rc));
		break;
	}
}

/*
 * The superblocks are read: gga_lc_plan_create() decides to format, assemble
 * or refuse; this carries it out.
 */
static void
create_decide(struct gga_create_ctx *ctx)
{
	struct gga_disk *disk = ctx->disk;
	uint32_t i, blank = 0, formatted = 0, other = 0, off;
	struct gga_lc_view view;
	struct gga_lc_plan plan;
	char label[160];
	uint64_t floor = 0;
	struct gga_sb tmp;
	int rc;

	for (i = 0; i < disk->n; i++) {
		if (ctx->absent & (1u << i)) {
			continue;
		}
		if (ctx->sb_rc[i] == -ENOENT) {
			blank |= 1u << i;
		} else if (ctx->sb_rc[i] == 0) {
			formatted |= 1u << i;
			floor = GGA_MAX(floor, ctx->sb[i].generation_epoch);
		} else {
			other |= 1u << i;
		}
	}

	gga_lc_plan_create(disk->n, disk->k, (enum gga_lc_mode)ctx->mode, ctx->force, ctx->absent,
			   blank, formatted, other, &plan);
	if (plan.kind == GGA_LC_PLAN_REFUSE) {
		create_refuse(ctx, &plan);
		goto out_fail_create;
	}
	ctx->format = plan.kind == GGA_LC_PLAN_FORMAT;
	if (ctx->format && ctx->waiting) {
		/*
		 * A waiting bdev waits for the members of an existing array: blank
		 * ones that turn up are not made a new array behind the host's back.
		 */
		create_set_msg(ctx, -EUCLEAN,
			       "the members that answered are blank: a bdev waiting for the "
			       "members of an existing array does not format new ones (delete it "
			       "and create it with mode create to start anew)");
		goto out_fail_create;
	}

	if (ctx->format) {
		if (ctx->uuid_set) {
			memcpy(disk->array_uuid, ctx->uuid, 16);
		} else {
			uuid_generate(disk->array_uuid);
		}
		/*
		 * A reformatted member may still hold fragments of its old life; new
		 * generations start above anything its old array handed out.
		 */
		ctx->epoch = GGA_MAX(floor, 1);
		/* The first update of a new array, as the module issues it: count 1. */
		gga_lc_new(&view, disk->k, disk->m);
		gga_lc_issue(&view, &ctx->lc_rec);
		rc = gga_sb_init(&tmp, disk->array_uuid, 0, disk->k, disk->m, disk->matrix,
				 disk->block_size, disk->md_size, disk->member_blocks);
		disk->region_shift = ctx->region_shift != 0 ? ctx->region_shift :
				     rc == 0                ? tmp.region_shift :
							      GGA_REGION_SHIFT_DEFAULT;
		if (rc == 0 &&
		    gga_bitmap_regions(tmp.data_blocks, disk->block_size, disk->region_shift) >
			    (uint64_t)gga_bitmap_bytes(disk->frag_size) * 8) {
			create_set_msg(ctx, -EINVAL,
				       "bitmap_region_kib %llu is too small for %" PRIu64
				       " blocks: the bitmap holds %u regions; use at least %llu",
				       (unsigned long long)((1ull << disk->region_shift) / 1024),
				       tmp.data_blocks, gga_bitmap_bytes(disk->frag_size) * 8,
				       (unsigned long long)((1ull << tmp.region_shift) / 1024));
			goto out_fail_create;
		}
		if ((1ull << disk->region_shift) < disk->block_size) {
			create_set_msg(ctx, -EINVAL,
				       "bitmap_region_kib %llu is smaller than a block of %u "
				       "bytes",
				       (unsigned long long)((1ull << disk->region_shift) / 1024),
				       disk->block_size);
			goto out_fail_create;
		}
	} else {
		rc = create_validate(ctx, formatted, blank);
		if (rc == 0) {
			rc = create_merge_bitmaps(ctx, formatted);
		}
		if (rc != 0) {
			goto out_fail_create;
		}
		ctx->epoch = GGA_MAX(ctx->epoch, 1);
	}

	/* Generations from `epoch` on; the next window is persisted before any is used. */
	disk->next_gen = ctx->epoch;
	disk->gen_limit = ctx->epoch + GGA_GEN_WINDOW;
	off = gga_bitmap_offset(disk->frag_size);
	for (i = 0; i < disk->n; i++) {
		uint8_t *region = ctx->region + i * ctx->region_len;

		memset(region, 0, ctx->region_len);
		rc = gga_sb_record_encode(disk, i, disk->gen_limit, &ctx->lc_rec, region);
		if (rc != 0) {
			create_set_msg(ctx, -EINVAL, "cannot encode the superblock of %s",
				       gga_member_label(disk, i, label, sizeof(label)));
			goto out_fail_create;
		}
		if (ctx->bitmap != NULL) {
			gga_area_scatter(disk, ctx->bitmap,
					 region + (off / disk->frag_size) * disk->mbs,
					 gga_bitmap_bytes(disk->frag_size));
		}
	}
	if (ctx->format) {
		create_zero_members(ctx);
	} else {
		create_write_superblocks(ctx);
	}
	return;

out_fail_create:
	/* Nothing has been written. */
	create_fail(ctx);
}

/*
 * The superblocks are read. A member whose read failed or stalled
 * (member_timeout_ms) is left out when assembling: absent to the module
 * (which refuses, or has the bdev wait, if the others are too few), failed
 * here, and probed once the array runs. Formatting needs every member.
 */
static void
create_read_end(struct gga_create_ctx *ctx)
{
	struct gga_fanout *fo = &ctx->fo;
	struct gga_disk *disk = ctx->disk;
	uint8_t rec[GGA_SB_SIZE];
	uint32_t i, failed;

	if (create_hold_for_resets(ctx, create_read_end)) {
		return;
	}
	failed = (disk->all_mask & ~ctx->absent) & ~fo->ok_mask;
	for (i = 0; i < disk->n; i++) {
		if (fo->ok_mask & (1u << i)) {
			gga_area_gather(disk, ctx->region + i * ctx->region_len, rec, sizeof(rec));
			ctx->sb_rc[i] = gga_sb_decode(rec, sizeof(rec), &ctx->sb[i]);
		}
	}
	if (create_check_removed(ctx)) {
		create_fail(ctx);
		return;
	}
	if (failed != 0 && ctx->mode != BDEV_GGA_MODE_CREATE) {
		for (i = 0; i < disk->n; i++) {
			if (!(failed & (1u << i))) {
				continue;
			}
			ctx->absent |= 1u << i;
			ctx->left_out |= 1u << i;
			/* Absent, as the module has it; probed like any absent member with a base. */
			create_member_state(&disk->members[i], BDEV_GGA_MEMBER_ABSENT,
					    (ctx->stalled & (1u << i)) ?
						    "stalled at assembly: no answer within "
						    "member_timeout_ms" :
						    "its superblock read failed at assembly");
		}
	} else {
		fo->fail_mask |= failed;
		if (create_step_failed(ctx, "reading the superblock of")) {
			return;
		}
	}
	create_decide(ctx);
}

static void
create_read_done(struct gga_fanout *fo)
{
	if (fo->sent_mask == 0) {
		/* Nothing was submitted: create_read_superblocks() fails from a message. */
		return;
	}
	create_read_end(container_of(fo, struct gga_create_ctx, fo));
}

static const struct gga_fanout_ops create_read_fanout = {
	.submit = create_region_submit,
	.done = create_read_done,
	.nomem = GGA_FANOUT_SKIP,
	.app = true,
};

/* Check the bases against each other and against the format. */
static int
create_check_geometry(struct gga_create_ctx *ctx)
{
	struct gga_disk *disk = ctx->disk;
	uint32_t i, first = 0, bs0, md0;
	struct bdev *b;
	char l0[160], l[160];
	uint64_t offset, nb0;

	/* The reference: the geometry given (save_config's), else the first member's. */
	if (ctx->geo_set) {
		snprintf(l0, sizeof(l0), "the array (member_block_size etc. given)");
		bs0 = ctx->geo_bs;
		md0 = ctx->geo_md;
		nb0 = ctx->geo_blocks;
	} else {
		first = (uint32_t)__builtin_ctz(disk->all_mask & ~ctx->absent);
		gga_member_label(disk, first, l0, sizeof(l0));
		b = disk->members[first].bdev;
		bs0 = bdev_get_block_size(b);
		md0 = bdev_get_md_size(b);
		nb0 = bdev_get_num_blocks(b);
	}
	for (i = 0; i < disk->n; i++) {
		if ((ctx->absent & (1u << i)) || (!ctx->geo_set && i == first)) {
			continue;
		}
		b = disk->members[i].bdev;
		gga_member_label(disk, i, l, sizeof(l));
		if (bdev_get_block_size(b) != bs0) {
			create_set_msg(
				ctx, -EINVAL,
				"%s has block_size %u, %s has %u: every member must have the "
				"same geometry (half-block targets made alike)",
				l, bdev_get_block_size(b), l0, bs0);
			return ctx->rc;
		}
		if (bdev_get_md_size(b) != md0) {
			create_set_msg(
				ctx, -EINVAL,
				"%s has md_size %u, %s has %u: every member must have the same "
				"geometry (half-block targets made alike)",
				l, bdev_get_md_size(b), l0, md0);
			return ctx->rc;
		}
		if (bdev_get_num_blocks(b) != nb0) {
			create_set_msg(ctx, -EINVAL,
				       "%s has num_blocks %" PRIu64 ", %s has %" PRIu64
				       ": every member must have the same size (a larger one: "
				       "recreate it at the others' size)",
				       l, bdev_get_num_blocks(b), l0, nb0);
			return ctx->rc;
		}
	}
	disk->frag_size = bs0;
	disk->md_size = md0;
	disk->member_blocks = nb0;
	disk->mbs = disk->frag_size + disk->md_size;
	if (disk->md_size < GGA_FRAG_MD_SIZE) {
		create_set_msg(
			ctx, -EINVAL,
			"the members have md_size %u; the gga format needs at least "
			"%u metadata bytes per block (create the members with --md_size 64, as "
			"scripts/gga_topology.sh does)",
			disk->md_size, GGA_FRAG_MD_SIZE);
		return ctx->rc;
	}
	if ((uint64_t)disk->frag_size * disk->k > 65536) {
		create_set_msg(ctx, -EINVAL,
			       "the members' block_size %u makes a logical block of %" PRIu64
			       " bytes; at most 65536 is supported",
			       disk->frag_size, (uint64_t)disk->frag_size * disk->k);
		return ctx->rc;
	}
	disk->block_size = disk->frag_size * disk->k;
	if (gga_geometry_check(disk->block_size, disk->k, disk->m, disk->md_size) != 0) {
		create_set_msg(ctx, -EINVAL,
			       "a logical block of %u bytes in %u + %u fragments with "
			       "md_size %u is not a valid gga geometry",
			       disk->block_size, disk->k, disk->m, disk->md_size);
		return ctx->rc;
	}
	offset = gga_sb_data_offset(disk->frag_size);
	if (disk->member_blocks <= offset) {
		create_set_msg(ctx, -EINVAL,
			       "the members have %" PRIu64 " blocks; the superblock region "
			       "takes %" PRIu64 ", so at least %" PRIu64 " are needed",
			       disk->member_blocks, offset, offset + 1);
		return ctx->rc;
	}
	disk->data_offset = offset;
	disk->sb_blocks = (GGA_SB_SIZE + disk->frag_size - 1) / disk->frag_size;
	return 0;
}

static int
create_open_members(struct gga_create_ctx *ctx)
{
	struct gga_disk *disk = ctx->disk;
	struct gga_member *member;
	char label[160];
	uint32_t i;
	int rc;

	for (i = 0; i < disk->n; i++) {
		member = &disk->members[i];
		gga_member_label(disk, i, label, sizeof(label));
		rc = bdev_open(member->name, true, gga_member_event_cb, member, &member->desc);
		if (rc == -ENODEV && ctx->mode != BDEV_GGA_MODE_CREATE) {
			/*
			 * An array can be assembled without it (a remote target still
			 * down): the member is absent, and claimed once a bdev of
			 * that name appears. A new array needs all its members.
			 */
			member->state = BDEV_GGA_MEMBER_ABSENT;
			member->reason = "base bdev does not exist";
			ctx->absent |= 1u << i;
			continue;
		}
		if (rc == -ENODEV) {
			create_set_msg(ctx, rc, "%s: base bdev does not exist", label);
			return rc;
		}
		if (rc == -EPERM) {
			create_set_msg(ctx, rc,
				       "%s: base bdev %s: delete or remove that first, or choose "
				       "another base",
				       label, bdev_busy_reason(member->name));
			return rc;
		}
		if (rc != 0) {
			create_set_msg(ctx, rc, "%s: cannot open the base bdev: %s", label,
				       strerror(-rc));
			return rc;
		}
		member->bdev = bdev_desc_get_bdev(member->desc);
		rc = bdev_module_claim_bdev(member->bdev, member->desc, &gga_bdev_module);
		if (rc != 0) {
			create_set_msg(ctx, rc,
				       "%s: base bdev %s: delete or remove that first, or choose "
				       "another base",
				       label, bdev_busy_reason(bdev_get_name(member->bdev)));
			return rc;
		}
		member->claimed = true;
		member->flush_supported = bdev_io_type_supported(member->bdev, BDEV_IO_TYPE_FLUSH);
		member->reset_supported = bdev_io_type_supported(member->bdev, BDEV_IO_TYPE_RESET);
	}
	if ((uint32_t)__builtin_popcount(disk->all_mask & ~ctx->absent) < disk->k &&
	    (!ctx->wait || ctx->absent == disk->all_mask)) {
		/*
		 * Waiting needs one member at least: its geometry is the bdev's,
		 * its record says which array this is (create_decide()).
		 */
		i = (uint32_t)__builtin_ctz(ctx->absent);
		if (ctx->wait && ctx->absent == disk->all_mask) {
			if (ctx->geo_set && ctx->uuid_set) {
				/* Registered from the geometry given, and waits (create_wait_none()). */
				return 0;
			}
			create_set_msg(ctx, -ENODEV,
				       "no member's base bdev exists (%s the first): a bdev that "
				       "waits for members needs one at least, to know the array's "
				       "block size and size, or member_block_size, member_md_size, "
				       "member_num_blocks and uuid (save_config writes them); "
				       "create it again once one is attached",
				       gga_member_label(disk, i, label, sizeof(label)));
			return ctx->rc;
		}
		create_set_msg(ctx, -ENODEV,
			       "%s: base bdev does not exist (and fewer than %u members "
			       "do)",
			       gga_member_label(disk, i, label, sizeof(label)), disk->k);
		return ctx->rc;
	}
	return 0;
}

static bool
name_in_use(const char *name)
{
	struct gga_disk *disk;

	if (bdev_get_by_name(name) != NULL) {
		return true;
	}
	TAILQ_FOREACH(disk, &g_creating, link) {
		if (strcmp(disk->bdev.name, name) == 0) {
			return true;
		}
	}
	return false;
}

/* Option checks that need no bdev. */
static int
create_check_opts(struct gga_create_ctx *ctx, const struct bdev_gga_opts *opts)
{
	char role[16], role2[16];
	uint32_t i, j, n = opts->k + opts->m;

	if (opts->name == NULL || opts->name[0] == '\0') {
		create_set_msg(ctx, -EINVAL, "name: required");
		return ctx->rc;
	}
	if (opts->k < 1 || opts->m < 1 || n > BDEV_GGA_MAX_MEMBERS) {
		create_set_msg(ctx, -EINVAL, "%u + %u members: need k >= 1, m >= 1, k + m <= %u",
			       opts->k, opts->m, BDEV_GGA_MAX_MEMBERS);
		return ctx->rc;
	}
	if (opts->m >= opts->k) {
		/*
		 * With m >= k two disjoint sets of k members exist: one of them can
		 * be assembled, or outvote the newest version of a block, without a
		 * member that saw the newest writes (docs/FORMAT.md 3.1).
		 */
		create_set_msg(ctx, -EINVAL,
			       "%u + %u members: need more data than parity members (k > m), so "
			       "that any k members share one with every other k",
			       opts->k, opts->m);
		return ctx->rc;
	}
	if (gga_matrix_name(opts->matrix) == NULL) {
		create_set_msg(ctx, -EINVAL, "matrix_type: unknown matrix %d", (int)opts->matrix);
		return ctx->rc;
	}
	for (i = 0; i < n; i++) {
		bdev_gga_role_name(i, opts->k, opts->m, role, sizeof(role));
		if (opts->members[i] == NULL || opts->members[i][0] == '\0') {
			create_set_msg(ctx, -EINVAL, "%s: base bdev name required", role);
			return ctx->rc;
		}
		for (j = 0; j < i; j++) {
			if (strcmp(opts->members[i], opts->members[j]) == 0) {
				bdev_gga_role_name(j, opts->k, opts->m, role2, sizeof(role2));
				create_set_msg(ctx, -EEXIST, "%s and %s are the same bdev '%s'",
					       role2, role, opts->members[i]);
				return ctx->rc;
			}
		}
		if (strcmp(opts->members[i], opts->name) == 0) {
			create_set_msg(ctx, -EINVAL, "%s: '%s' is the gga bdev's own name", role,
				       opts->name);
			return ctx->rc;
		}
	}
	if (opts->uuid != NULL) {
		if (uuid_parse(opts->uuid, ctx->uuid) != 0 || uuid_is_null(ctx->uuid)) {
			create_set_msg(ctx, -EINVAL, "uuid: '%s' is not a valid UUID", opts->uuid);
			return ctx->rc;
		}
		ctx->uuid_set = true;
	}
	if (opts->bitmap_region_kib != 0 &&
	    (!is_pow2(opts->bitmap_region_kib) || opts->bitmap_region_kib < 4 ||
	     opts->bitmap_region_kib > (1u << (GGA_REGION_SHIFT_MAX - 10)))) {
		create_set_msg(ctx, -EINVAL,
			       "bitmap_region_kib: %u is not a power of two from 4 to %u",
			       opts->bitmap_region_kib, 1u << (GGA_REGION_SHIFT_MAX - 10));
		return ctx->rc;
	}
	if (opts->layout != GGA_LAYOUT_FIXED) {
		/* The packed log's I/O path is not in this build (docs/DESIGN.md). */
		create_set_msg(ctx, -EINVAL, "layout: '%s' is not yet supported",
			       gga_layout_name(opts->layout) != NULL ?
				       gga_layout_name(opts->layout) :
				       "?");
		return ctx->rc;
	}
	if (opts->force && opts->mode != BDEV_GGA_MODE_CREATE) {
		create_set_msg(ctx, -EINVAL, "force: only valid with mode create");
		return ctx->rc;
	}
	if (opts->front_id != 0 && !ctx->uuid_set) {
		create_set_msg(ctx, -EINVAL,
			       "front_id: a shared array needs its uuid (both fronts export the "
			       "same namespace, and a standby may not read the members)");
		return ctx->rc;
	}
	if (opts->front_id != 0 && opts->lease_ms != 0 && opts->lease_ms < 100) {
		create_set_msg(ctx, -EINVAL, "lease_ms: %u is below 100", opts->lease_ms);
		return ctx->rc;
	}
	if (opts->front_id == 0 && opts->standby) {
		create_set_msg(ctx, -EINVAL, "standby: only with front_id");
		return ctx->rc;
	}
	if ((opts->member_block_size != 0 || opts->member_md_size != 0 ||
	     opts->member_num_blocks != 0) &&
	    (opts->member_block_size == 0 || opts->member_md_size == 0 ||
	     opts->member_num_blocks == 0)) {
		create_set_msg(ctx, -EINVAL,
			       "member_block_size, member_md_size and member_num_blocks: give all "
			       "three (the members' geometry, as save_config writes it) or none");
		return ctx->rc;
	}
	ctx->geo_set = opts->member_block_size != 0;
	ctx->geo_bs = opts->member_block_size;
	ctx->geo_md = opts->member_md_size;
	ctx->geo_blocks = opts->member_num_blocks;
	if (name_in_use(opts->name)) {
		create_set_msg(ctx, -EEXIST, "bdev '%s' already exists", opts->name);
		return ctx->rc;
	}
	return 0;
}

/*
 * Read every present member's reserved region: its superblock and bitmap, or
 * nothing. Returns 0 (creation goes on in create_read_done), or the result of
 * create_fail_async.
 */
static int create_poll(void *arg);

static int
create_read_superblocks(struct gga_create_ctx *ctx)
{
	struct gga_disk *disk = ctx->disk;

	if (ctx->poller == NULL) {
		ctx->poller = poller_register(create_poll, ctx, CREATE_POLL_US, "gga_create");
		if (ctx->poller == NULL) {
			WARNLOG("gga bdev '%s': no poller to watch the assembly's member I/O\n",
				disk->bdev.name);
		}
	}
	if (!gga_fanout_start(&ctx->fo, &create_read_fanout, disk, disk->all_mask & ~ctx->absent)) {
		/* Nothing was submitted, so nothing calls back: fail from a message. */
		create_set_msg(ctx, -EIO, "cannot read the superblocks");
		if (ctx->waiting) {
			/* (An attempt of create_poll(): the next one tries again.) */
			create_wait_again(ctx);
			return 0;
		}
		return create_fail_async(ctx);
	}
	return 0;
}

/*
 * Before another try of an assembly (a waiting one, or a front's after a
 * failed one): the members left out, stalled or unwritten, the records and
 * the bitmap read by the last try are forgotten; `absent` starts from the
 * mask given.
 */
static void
create_attempt_reset(struct gga_create_ctx *ctx, uint32_t absent)
{
	ctx->absent = absent;
	ctx->left_out = 0;
	ctx->stalled = 0;
	ctx->write_failed = 0;
	memset(ctx->sb_rc, 0, sizeof(ctx->sb_rc));
	memset(ctx->sb, 0, sizeof(ctx->sb));
	free(ctx->bitmap);
	ctx->bitmap = NULL;
}

/*
 * Register the bdev before its assembly ends (a front, or a bdev waiting for
 * members): it leaves the list of bdevs being created, and returns to it if
 * the registration fails. Returns 0 or the registration's error.
 */
static int
create_register(struct gga_create_ctx *ctx)
{
	struct gga_disk *disk = ctx->disk;
	int rc;

	TAILQ_REMOVE(&g_creating, disk, link);
	ctx->creating_listed = false;
	rc = gga_disk_register(disk);
	if (rc != 0) {
		TAILQ_INSERT_TAIL(&g_creating, disk, link);
		ctx->creating_listed = true;
	}
	return rc;
}

/* The bdev of a front is registered: the caller learns it now, before any assembly. */
static void
create_front_registered(void *arg)
{
	struct gga_create_ctx *ctx = arg;
	bdev_gga_create_cb cb = ctx->cb;

	if (cb != NULL) {
		ctx->cb = NULL;
		cb(ctx->cb_arg, &ctx->disk->bdev, 0, "");
	}
}

#ifdef GGA_TEST_HOOKS
static int
create_test_delay_end(void *arg)
{
	struct gga_create_ctx *ctx = arg;

	poller_unregister(&ctx->test_delay);
	NOTICELOG("gga bdev '%s': test hook: the assembly reads the superblocks now\n",
		  ctx->disk->bdev.name);
	if (create_read_superblocks(ctx) != 0) {
		ERRLOG("gga bdev '%s': cannot start the assembly\n", ctx->disk->bdev.name);
	}
	return POLLER_BUSY;
}

/*
 * Test hook (test_gga_assembly_delay): hold the front's assembly between
 * taking the members and reading their superblocks, once, so that a test
 * can lose a member the front has just taken (issue 32, case 6). True if
 * the reads wait for create_test_delay_end().
 */
static bool
create_test_delay(struct gga_create_ctx *ctx, uint32_t held)
{
	struct gga_disk *disk = ctx->disk;
	uint32_t ms = disk->test_assembly_delay_ms;

	if (ms == 0) {
		return false;
	}
	disk->test_assembly_delay_ms = 0;
	ctx->test_delay = poller_register(create_test_delay_end, ctx, (uint64_t)ms * 1000,
					  "gga_test_delay");
	if (ctx->test_delay == NULL) {
		return false;
	}
	NOTICELOG("gga bdev '%s': test hook: front holds members 0x%x; the assembly waits %u ms "
		  "before reading their superblocks\n",
		  disk->bdev.name, held, ms);
	return true;
}

int
bdev_gga_test_assembly_delay(const char *name, uint32_t ms)
{
	struct gga_disk *disk = gga_disk_lookup(name);

	if (disk == NULL || disk->front == NULL) {
		return -ENODEV;
	}
	disk->test_assembly_delay_ms = ms;
	return 0;
}
#endif

/*
 * A front watches its members' bases between its assemblies (create_poll(),
 * create_front_reopen()): one absent at its creation, removed while it
 * stood by, or when it let go of an assembly is opened when it appears,
 * whether or not wait_for_members was given: a front that could serve with
 * it must not stay down (its takeover reaches only the bases it has open)
 * for want of a base that came back.
 */
static void
create_front_watch(struct gga_create_ctx *ctx)
{
	if (ctx->poller == NULL) {
		ctx->poller = poller_register(create_poll, ctx, CREATE_POLL_US, "gga_create");
		if (ctx->poller == NULL) {
			WARNLOG("gga bdev '%s': no poller to open the members' bases that appear "
				"later\n",
				ctx->disk->bdev.name);
		}
	}
}

/*
 * This front holds its members (gga_front_shell): read and assemble (or
 * format) the ones it holds; the others are left out, as absent members,
 * and probed once it holds them too.
 */
static void
create_front_assemble(void *arg)
{
	struct gga_create_ctx *ctx = arg;
	struct gga_disk *disk = ctx->disk;
	uint32_t held = gga_front_shell_held_mask(disk), i;

	ctx->front_busy = true;
	create_front_registered(ctx);
	/*
	 * Bases removed while this front stood by are absent members now (they
	 * are opened again when they appear), not a reason to fail every
	 * assembly to come.
	 */
	for (i = 0; i < disk->n; i++) {
		if (disk->members[i].removing && !(ctx->open_absent & (1u << i))) {
			ctx->open_absent |= 1u << i;
			ctx->open_state[i] = BDEV_GGA_MEMBER_ABSENT;
			ctx->open_reason[i] = "base bdev removed";
		}
	}
	create_front_watch(ctx);
	/*
	 * Another try after a failed one (the disk never started): from the
	 * members as they were opened, with what this front holds now.
	 */
	create_attempt_reset(ctx, ctx->open_absent);
	for (i = 0; i < disk->n; i++) {
		disk->members[i].state = ctx->open_state[i];
		disk->members[i].reason = ctx->open_reason[i];
	}
	ctx->rc = 0;
	ctx->msg[0] = '\0';
	if (create_check_removed(ctx)) {
		create_fail(ctx);
		return;
	}
	for (i = 0; i < disk->n; i++) {
		if (!(held & (1u << i)) && !(ctx->absent & (1u << i))) {
			ctx->absent |= 1u << i;
			disk->members[i].state = BDEV_GGA_MEMBER_ABSENT;
			disk->members[i].reason = gga_front_shell_not_held_why(disk, i);
		}
	}
	if (ctx->mode == BDEV_GGA_MODE_CREATE && ctx->absent != 0) {
		create_set_msg(ctx, -EBUSY,
			       "mode create needs every member, and this front holds "
			       "only some");
		create_fail(ctx);
		return;
	}
#ifdef GGA_TEST_HOOKS
	if (create_test_delay(ctx, held)) {
		return;
	}
#endif
	if (create_read_superblocks(ctx) != 0) {
		ERRLOG("gga bdev '%s': cannot start the assembly\n", disk->bdev.name);
	}
}

/*
 * A front that stepped down has let go of its assembly (gga_disk_forget()):
 * a new context for its next one, which assembles the members as they are
 * then (never formats: the array exists) and holds the disk like the first.
 */
static void
create_front_forgotten(struct gga_disk *disk)
{
	struct gga_create_ctx *ctx = calloc(1, sizeof(*ctx));
	struct gga_member *member;
	uint32_t i;

	if (ctx != NULL) {
		ctx->region_len = disk->data_offset * disk->mbs;
		ctx->region = env_dma_zmalloc(disk->n * ctx->region_len, 0);
	}
	if (ctx == NULL || ctx->region == NULL) {
		ERRLOG("gga bdev '%s': out of memory for its next assembly: it stays stepped down "
		       "until the bdev is created again\n",
		       disk->bdev.name);
		if (ctx != NULL) {
			create_ctx_free(ctx);
		}
		return;
	}
	ctx->disk = disk;
	ctx->mode = BDEV_GGA_MODE_ASSEMBLE;
	ctx->uuid_set = true;
	memcpy(ctx->uuid, disk->array_uuid, sizeof(ctx->uuid));
	ctx->matrix_set = true;
	ctx->early = true;
	for (i = 0; i < disk->n; i++) {
		member = &disk->members[i];
		if (member->state == BDEV_GGA_MEMBER_ABSENT) {
			ctx->open_absent |= 1u << i;
		}
		ctx->open_state[i] = member->state;
		ctx->open_reason[i] = member->reason;
	}
	create_front_watch(ctx);
	/* The assembly holds the disk; create_early_end lets it go. */
	disk->pending_ops++;
	gga_front_shell_rearm(disk, ctx);
}

/* An assembled front stepped down: the disk lets go of the assembly. */
static void
create_front_unassemble(struct gga_disk *disk)
{
	int rc = gga_disk_forget(disk, create_front_forgotten);

	if (rc != 0 && rc != -ENODEV) {
		ERRLOG("gga bdev '%s': cannot let go of its assembly: %s; it stays stepped down "
		       "until the bdev is created again\n",
		       disk->bdev.name, strerror(-rc));
	}
}

/*
 * A front of a shared array (docs/DESIGN.md 1): register the bdev now,
 * inaccessible, so that its NVMe-oF namespace can be exported; read and
 * write the members only once this front holds them.
 */
static int
create_front(struct gga_create_ctx *ctx, const struct bdev_gga_opts *opts)
{
	struct gga_disk *disk = ctx->disk;
	char label[160];
	uint32_t i;
	int rc;

	for (i = 0; i < disk->n; i++) {
		if (ctx->absent & (1u << i)) {
			continue;
		}
		if (!bdev_io_type_supported(disk->members[i].bdev, BDEV_IO_TYPE_NVME_RESV)) {
			create_set_msg(
				ctx, -EOPNOTSUPP,
				"%s: a front of a shared array (front_id) needs members that "
				"are NVMe namespaces with reservations, to fence the other "
				"front at the members",
				gga_member_label(disk, i, label, sizeof(label)));
			return create_fail_async(ctx);
		}
	}
	memcpy(disk->array_uuid, ctx->uuid, sizeof(disk->array_uuid));
	rc = gga_front_shell_create(disk, opts->front_id,
				    opts->lease_ms != 0 ? opts->lease_ms : 2000, opts->standby);
	if (rc != 0) {
		create_set_msg(ctx, rc, "out of memory");
		return create_fail_async(ctx);
	}
	rc = create_register(ctx);
	if (rc != 0) {
		create_set_msg(ctx, rc, "registering the bdev failed: %s", strerror(-rc));
		return create_fail_async(ctx);
	}
	ctx->early = true;
	ctx->open_absent = ctx->absent;
	for (i = 0; i < disk->n; i++) {
		ctx->open_state[i] = disk->members[i].state;
		ctx->open_reason[i] = disk->members[i].reason;
	}
	create_front_watch(ctx);
	/* The assembly holds the disk; create_early_end lets it go. */
	disk->pending_ops++;
	rc = gga_front_shell_run(disk, create_front_assemble, ctx, create_front_unassemble);
	if (rc == 0) {
		rc = thread_send_msg(thread_get_current(), create_front_registered, ctx);
	}
	if (rc != 0) {
		/* Registered: it is deleted like any bdev; this call reports the failure. */
		ERRLOG("gga bdev '%s': cannot start its front role: %s\n", disk->bdev.name,
		       strerror(-rc));
		ctx->cb = NULL;
		gga_front_shell_assembled(disk, rc, "cannot start the role poller");
		create_early_end(ctx);
		return rc;
	}
	return 0;
}

/* ---------------------------------------------------------------------- */
/* The watch over the creation's I/O, and an assembly that waits           */
/* ---------------------------------------------------------------------- */

static bool
create_resetting(const struct gga_disk *disk)
{
	uint32_t i;

	for (i = 0; i < disk->n; i++) {
		if (disk->members[i].app_resetting) {
			return true;
		}
	}
	return false;
}

/*
 * A step's I/O has ended; a reset the watch sent may not have: the step
 * goes on (fn) once it has, so that nothing is released under it.
 */
static bool
create_hold_for_resets(struct gga_create_ctx *ctx, void (*fn)(struct gga_create_ctx *ctx))
{
	if (!create_resetting(ctx->disk)) {
		return false;
	}
	ctx->after_resets = fn;
	return true;
}

/* A waiting bdev's states: nothing online, each member says why. */
static void
create_wait_states(struct gga_create_ctx *ctx)
{
	struct gga_disk *disk = ctx->disk;
	struct gga_member *member;
	uint32_t i, bit;

	for (i = 0; i < disk->n; i++) {
		member = &disk->members[i];
		bit = 1u << i;
		if (ctx->left_out & bit) {
			create_member_state(
				member, BDEV_GGA_MEMBER_ABSENT,
				(ctx->stalled & bit) ?
					"stalled at assembly: no answer within "
					"member_timeout_ms; read again each second" :
					"its superblock read failed: read again each second");
		} else if (ctx->absent & bit) {
			create_member_state(member, BDEV_GGA_MEMBER_ABSENT,
					    ctx->why[i] != NULL ? ctx->why[i] :
								  "base bdev does not exist: the "
								  "assembly waits for it");
		} else {
			create_member_state(member, BDEV_GGA_MEMBER_STALE,
					    "the assembly waits for k members in sync");
		}
	}
	__atomic_store_n(&disk->live_mask, 0, __ATOMIC_RELEASE);
	__atomic_store_n(&disk->write_mask, 0, __ATOMIC_RELEASE);
}

/* The waiting is over (assembled, or the bdev deleted): the disk stays, the context goes. */
static void
create_wait_end(struct gga_create_ctx *ctx)
{
	create_early_end(ctx);
}

/* An attempt did not assemble: wait on, and say why if that changed. */
static void
create_wait_again(struct gga_create_ctx *ctx)
{
	struct gga_disk *disk = ctx->disk;

	ctx->busy = false;
	if (disk->destructing) {
		create_wait_end(ctx);
		return;
	}
	create_wait_states(ctx);
	if (strcmp(disk->wait_msg, ctx->msg) != 0) {
		snprintf(disk->wait_msg, sizeof(disk->wait_msg), "%s", ctx->msg);
		WARNLOG("gga bdev '%s': still waiting for members: %s\n", disk->bdev.name,
			ctx->msg);
	}
}

/*
 * Assembly found an existing array of which fewer than k members in sync
 * answered, and the members that did not could make k (the module's word):
 * register the bdev now, failing every request (gated, like a front that
 * does not serve), report success, and retry the assembly every second
 * (create_poll()). Returns non-zero if it could not register: creation
 * fails as it would without waiting.
 */
static int
create_wait_start(struct gga_create_ctx *ctx)
{
	struct gga_disk *disk = ctx->disk;
	bdev_gga_create_cb cb = ctx->cb;
	uint32_t i;
	int rc;

	ctx->may_wait = false;
	/* From now on the array is this one, with its matrix: a retry checks them. */
	memcpy(ctx->uuid, disk->array_uuid, sizeof(ctx->uuid));
	ctx->uuid_set = true;
	ctx->matrix_set = true;
	for (i = 0; i < disk->n; i++) {
		if (disk->members[i].removing) {
			/* Removed before registration: nothing else releases it. */
			gga_member_close(&disk->members[i]);
			ctx->absent |= 1u << i;
		}
	}
	__atomic_store_n(&disk->waiting, true, __ATOMIC_RELEASE);
	snprintf(disk->wait_msg, sizeof(disk->wait_msg), "%s", ctx->msg);
	create_wait_states(ctx);
	rc = create_register(ctx);
	if (rc != 0) {
		__atomic_store_n(&disk->waiting, false, __ATOMIC_RELEASE);
		return rc;
	}
	ctx->waiting = true;
	ctx->busy = false;
	ctx->ticks = 0;
	/* The waiting holds the disk; create_wait_end lets it go. */
	disk->pending_ops++;
	WARNLOG("gga bdev '%s': registered, failing every request, waiting for members: %s; "
		"assembled once %u members in sync answer\n",
		disk->bdev.name, ctx->msg, disk->k);
	if (ctx->poller == NULL) {
		ERRLOG("gga bdev '%s': no poller to retry the assembly; delete and create it "
		       "again\n",
		       disk->bdev.name);
		ctx->cb = NULL;
		cb(ctx->cb_arg, &disk->bdev, 0, "");
		create_wait_end(ctx);
		return 0;
	}
	ctx->cb = NULL;
	cb(ctx->cb_arg, &disk->bdev, 0, "");
	return 0;
}

/* Open member i's base bdev again, if one of its name exists now. */
static int
create_reopen(struct gga_create_ctx *ctx, uint32_t i)
{
	struct gga_disk *disk = ctx->disk;
	struct gga_member *member = &disk->members[i];
	char label[160];
	struct bdev *b;
	int rc;

	ctx->why[i] = NULL;
	if (bdev_get_by_name(member->name) == NULL) {
		return -ENODEV;
	}
	rc = bdev_open(member->name, true, gga_member_event_cb, member, &member->desc);
	if (rc != 0) {
		member->desc = NULL;
		ctx->why[i] = "its base bdev cannot be opened (claimed by another?)";
		return rc;
	}
	b = bdev_desc_get_bdev(member->desc);
	if (bdev_get_block_size(b) != disk->frag_size || bdev_get_md_size(b) != disk->md_size ||
	    bdev_get_num_blocks(b) != disk->member_blocks ||
	    (disk->direct_reads && bdev_get_buf_align(b) > 1)) {
		ctx->why[i] = "its base bdev has another geometry (block size, metadata size or "
			      "number of blocks) than the array's: not taken";
		rc = -EINVAL;
		goto out_close;
	}
	if (disk->front != NULL && !bdev_io_type_supported(b, BDEV_IO_TYPE_NVME_RESV)) {
		ctx->why[i] = "its base bdev is not an NVMe namespace with reservations, which "
			      "a front of a shared array needs";
		rc = -EOPNOTSUPP;
		goto out_close;
	}
	rc = bdev_module_claim_bdev(b, member->desc, &gga_bdev_module);
	if (rc != 0) {
		ctx->why[i] = "its base bdev is claimed by another module";
		goto out_close;
	}
	member->bdev = b;
	member->claimed = true;
	member->app_ch = bdev_get_io_channel(member->desc);
	if (member->app_ch == NULL) {
		ctx->why[i] = "no I/O channel to its base bdev";
		rc = -ENOMEM;
		goto out_close;
	}
	member->flush_supported = bdev_io_type_supported(b, BDEV_IO_TYPE_FLUSH);
	member->reset_supported = bdev_io_type_supported(b, BDEV_IO_TYPE_RESET);
	member->removing = false;
	member->close_deferred = false;
	NOTICELOG("gga bdev '%s': %s: base bdev appeared; reading its superblock\n",
		  disk->bdev.name, gga_member_label(disk, i, label, sizeof(label)));
	return 0;

out_close:
	gga_member_close(member);
	return rc;
}

/* One more try of a waiting assembly: every member that has a base now is read. */
static void
create_attempt(struct gga_create_ctx *ctx)
{
	struct gga_disk *disk = ctx->disk;
	struct gga_member *member;
	char label[160];
	uint32_t i;

	ctx->busy = true;
	ctx->may_wait = false;
	create_attempt_reset(ctx, 0);
	for (i = 0; i < disk->n; i++) {
		member = &disk->members[i];
		if (member->desc == NULL) {
			if (create_reopen(ctx, i) != 0) {
				ctx->absent |= 1u << i;
			}
		} else if (member->removing || member->app_ch == NULL) {
			/* Going away: its channels are being released. */
			ctx->absent |= 1u << i;
		}
	}
	if (ctx->absent == disk->all_mask) {
		for (i = 0; i < disk->n && ctx->why[i] == NULL; i++) {
		}
		if (i < disk->n) {
			/* One exists but cannot be taken (another geometry?): say so, logged once. */
			create_set_msg(ctx, -ENODEV, "no member can be taken: %s: %s",
				       gga_member_label(disk, i, label, sizeof(label)),
				       ctx->why[i]);
		} else {
			create_set_msg(ctx, -ENODEV, "no member's base bdev exists");
		}
		create_wait_again(ctx);
		return;
	}
	create_read_superblocks(ctx);
}

/*
 * A front that waits for members, between its assemblies: the bases of
 * absent members that appeared are opened, so that its shell takes their
 * reservations and its next assembly reads them. Its reservation rules are
 * the shell's, untouched.
 */
static void
create_front_reopen(struct gga_create_ctx *ctx)
{
	struct gga_disk *disk = ctx->disk;
	struct gga_member *member;
	uint32_t i;

	for (i = 0; i < disk->n; i++) {
		member = &disk->members[i];
		if (member->removing && member->desc == NULL && !(ctx->open_absent & (1u << i))) {
			/* Its base went while this front stood by: absent until it is back. */
			ctx->open_absent |= 1u << i;
			ctx->open_state[i] = BDEV_GGA_MEMBER_ABSENT;
			ctx->open_reason[i] = "base bdev removed";
		}
		if (!(ctx->open_absent & (1u << i)) || member->desc != NULL) {
			continue;
		}
		if (create_reopen(ctx, i) != 0) {
			if (ctx->why[i] != NULL) {
				ctx->open_reason[i] = ctx->why[i];
				create_member_state(member, BDEV_GGA_MEMBER_ABSENT, ctx->why[i]);
			}
			continue;
		}
		ctx->open_absent &= ~(1u << i);
		ctx->open_state[i] = BDEV_GGA_MEMBER_ONLINE;
		ctx->open_reason[i] = NULL;
		ctx->reopened |= 1u << i;
		create_member_state(member, BDEV_GGA_MEMBER_ONLINE, NULL);
	}
}

/*
 * Every CREATE_POLL_US while the context lives: the watch over its member
 * I/O (a member that holds a superblock read or write for member_timeout_ms
 * is reset, so that the I/O ends, and is left out), a step held for a reset,
 * and, once a second, the next attempt of a waiting assembly.
 */
static int
create_poll(void *arg)
{
	struct gga_create_ctx *ctx = arg;
	struct gga_disk *disk = ctx->disk;
	void (*fn)(struct gga_create_ctx * ctx);
	uint32_t stalled, i;
	char label[160];

	stalled = gga_app_watch_round(disk, false);
	for (i = 0; i < disk->n; i++) {
		if (stalled & (1u << i)) {
			WARNLOG("gga bdev '%s': %s has not answered the assembly's superblock "
				"I/O for %u ms; resetting it and going on without it\n",
				disk->bdev.name, gga_member_label(disk, i, label, sizeof(label)),
				disk->timeout_ms);
		}
	}
	ctx->stalled |= stalled;
	if (ctx->after_resets != NULL) {
		if (create_resetting(disk)) {
			return POLLER_BUSY;
		}
		fn = ctx->after_resets;
		ctx->after_resets = NULL;
		/* (It may end the context, and this poller with it.) */
		fn(ctx);
		return POLLER_BUSY;
	}
	if (ctx->early) {
		if (!ctx->front_busy && !disk->destructing && ++ctx->ticks >= CREATE_RETRY_TICKS) {
			ctx->ticks = 0;
			create_front_reopen(ctx);
		}
		return stalled != 0 ? POLLER_BUSY : POLLER_IDLE;
	}
	if (!ctx->waiting || ctx->busy || ++ctx->ticks < CREATE_RETRY_TICKS) {
		return stalled != 0 ? POLLER_BUSY : POLLER_IDLE;
	}
	ctx->ticks = 0;
	if (disk->destructing) {
		create_wait_end(ctx);
	} else {
		create_attempt(ctx);
	}
	return POLLER_BUSY;
}

/*
 * No member's base bdev exists, and the geometry and uuid were given: the
 * bdev is registered from them, waiting (every request fails), and the
 * retries of create_poll() take the members as they appear; their bases and
 * superblocks must match the geometry and uuid (create_reopen(),
 * create_validate()).
 */
static void
create_wait_none(void *arg)
{
	struct gga_create_ctx *ctx = arg;
	struct gga_disk *disk = ctx->disk;

	memcpy(disk->array_uuid, ctx->uuid, sizeof(disk->array_uuid));
	create_set_msg(ctx, -ENODEV, "no member's base bdev exists");
	ctx->poller = poller_register(create_poll, ctx, CREATE_POLL_US, "gga_create");
	if (ctx->poller == NULL) {
		create_set_msg(ctx, -ENOMEM,
			       "no member's base bdev exists, and no poller to wait for them");
		create_fail(ctx);
		return;
	}
	if (create_wait_start(ctx) != 0) {
		create_set_msg(ctx, -ENOMEM,
			       "no member's base bdev exists, and registering the waiting bdev "
			       "failed");
		create_fail(ctx);
	}
}

void
bdev_gga_opts_init(struct bdev_gga_opts *opts)
{
	memset(opts, 0, sizeof(*opts));
	opts->k = 2;
	opts->m = 1;
	opts->matrix = GGA_MATRIX_VANDERMONDE;
	opts->repair = true;
	opts->mode = BDEV_GGA_MODE_AUTO;
	opts->auto_readd = true;
	opts->rebuild_rate_mib_s = 100;
	/* md's read-error limit (20), within ZFS's window for faulting a vdev (10 min). */
	opts->member_error_limit = 20;
	opts->member_error_window_s = 600;
	opts->member_timeout_ms = 5000;
	opts->lease_ms = 2000;
}

int
bdev_gga_create(const struct bdev_gga_opts *opts, bdev_gga_create_cb cb, void *cb_arg)
{
	struct gga_create_ctx *ctx;
	struct gga_codec_opts copts;
	struct gga_disk *disk;
	struct gga_member *member;
	char label[160];
	uint32_t i;
	int rc;

	if (opts == NULL || cb == NULL) {
		return -EINVAL;
	}
	ctx = calloc(1, sizeof(*ctx));
	if (ctx == NULL) {
		return -ENOMEM;
	}
	ctx->cb = cb;
	ctx->cb_arg = cb_arg;
	ctx->mode = opts->mode;
	ctx->force = opts->force;
	/*
	 * A new array needs all its members. A front registers early anyway;
	 * waiting, it may start with fewer than k bases and opens those that
	 * appear between its assemblies (create_front_reopen()).
	 */
	ctx->wait = opts->wait_for_members && opts->mode != BDEV_GGA_MODE_CREATE;
	ctx->matrix_set = opts->matrix_set;
	if (create_check_opts(ctx, opts) != 0) {
		return create_fail_async(ctx);
	}

	/* Its generation counter and lock bits sit on cache lines of their own. */
	disk = aligned_alloc(GGA_CACHE_LINE, align_up(sizeof(*disk), GGA_CACHE_LINE));
	if (disk == NULL) {
		free(ctx);
		return -ENOMEM;
	}
	memset(disk, 0, sizeof(*disk));
	pthread_mutex_init(&disk->gone_mutex, NULL);
	pthread_mutex_init(&disk->stall_mutex, NULL);
	gga_sb_writer_init(disk);
	disk->bdev.name = strdup(opts->name);
	if (disk->bdev.name == NULL) {
		gga_disk_free(disk);
		free(ctx);
		return -ENOMEM;
	}
	ctx->disk = disk;
	TAILQ_INSERT_TAIL(&g_creating, disk, link);
	ctx->creating_listed = true;
	disk->app_thread = thread_get_current();
	disk->k = opts->k;
	disk->m = opts->m;
	disk->n = opts->k + opts->m;
	disk->data_mask = (1u << disk->k) - 1;
	disk->all_mask = (1u << disk->n) - 1;
	disk->live_mask = disk->all_mask;
	disk->write_mask = disk->all_mask;
	disk->auto_readd = opts->auto_readd;
	disk->rebuild_rate = opts->rebuild_rate_mib_s;
	disk->err_limit = opts->member_error_limit;
	disk->err_window_s = opts->member_error_window_s;
	disk->timeout_ms = opts->member_timeout_ms;
	if (opts->bitmap_region_kib != 0) {
		ctx->region_shift = (uint32_t)__builtin_ctz(opts->bitmap_region_kib) + 10;
	}
	disk->matrix = opts->matrix;
	disk->recovery_read_every_n = opts->recovery_read_every_n;
	disk->repair = opts->repair;
	for (i = 0; i < disk->n; i++) {
		member = &disk->members[i];
		member->disk = disk;
		member->index = i;
		member->state = BDEV_GGA_MEMBER_ONLINE;
		member->name = strdup(opts->members[i]);
		if (member->name == NULL) {
			create_set_msg(ctx, -ENOMEM, "out of memory");
			return create_fail_async(ctx);
		}
	}
	if (create_open_members(ctx) != 0 || create_check_geometry(ctx) != 0) {
		return create_fail_async(ctx);
	}
	gga_codec_opts_init(&copts);
	copts.block_size = disk->block_size;
	copts.k = disk->k;
	copts.m = disk->m;
	copts.matrix = disk->matrix;
	copts.md_size = disk->md_size;
	rc = gga_codec_create(&copts, &disk->codec);
	if (rc != 0) {
		create_set_msg(ctx, rc, "cannot create the codec for %u + %u with the %s matrix%s",
			       disk->k, disk->m, gga_matrix_name(disk->matrix),
			       rc == -EINVAL ? " (not recoverable; try cauchy)" : "");
		return create_fail_async(ctx);
	}

	ctx->region_len = disk->data_offset * disk->mbs;
	ctx->region = env_dma_zmalloc(disk->n * ctx->region_len, 0);
	if (ctx->region == NULL) {
		create_set_msg(ctx, -ENOMEM, "out of DMA memory for the superblock region");
		return create_fail_async(ctx);
	}
	for (i = 0; i < disk->n; i++) {
		member = &disk->members[i];
		if (ctx->absent & (1u << i)) {
			continue;
		}
		member->app_ch = bdev_get_io_channel(member->desc);
		if (member->app_ch == NULL) {
			create_set_msg(ctx, -ENOMEM, "%s: no I/O channel",
				       gga_member_label(disk, i, label, sizeof(label)));
			return create_fail_async(ctx);
		}
	}

	if (opts->front_id != 0) {
		return create_front(ctx, opts);
	}
	if (ctx->absent == disk->all_mask) {
		/* (Only waiting, with the geometry given: create_open_members().) */
		if (thread_send_msg(thread_get_current(), create_wait_none, ctx) != 0) {
			create_set_msg(ctx, -ENOMEM, "out of memory");
			return create_fail_async(ctx);
		}
		return 0;
	}
	return create_read_superblocks(ctx);
}
