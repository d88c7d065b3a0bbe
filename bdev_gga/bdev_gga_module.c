/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The gga bdev module's face: the function table, registration of a disk
 * that creation assembled, deletion and the information calls. It stands on
 * the disk's layers (member states, the superblock writer, channels, the
 * end of a disk), the write-intent bitmap, the recovery walk and the
 * probes; only creation and the RPCs call it.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gga/bdev_module.h"
#include "gga/log.h"
#include "gga/util.h"
#include "gga/uuid.h"

#include "bdev_gga_bitmap.h"
#include "bdev_gga_channel.h"
#include "bdev_gga_front.h"
#include "bdev_gga_io.h"
#include "bdev_gga_member.h"
#include "bdev_gga_module.h"
#include "bdev_gga_recover.h"
#include "bdev_gga_remove.h"
#include "bdev_gga_walk.h"

/* ---------------------------------------------------------------------- */
/* Function table                                                          */
/* ---------------------------------------------------------------------- */

static void
disk_unregistered(void *io_device)
{
	struct gga_disk *disk = io_device;

	disk->channels_gone = true;
	gga_disk_try_free(disk);
}

static int
gga_destruct(void *ctxt)
{
	struct gga_lc_event ev = { .type = GGA_LC_EV_DELETE };
	struct gga_disk *disk = ctxt;

	/* The module stops the pass (resumed from its last checkpoint at the next assembly). */
	gga_lc_step(disk, &ev, false, "deleted", NULL, NULL);
	if (gga_bitmap_close_eligible(disk)) {
		disk->closing = GGA_CLOSE_WANTED;
	}
	disk->destructing = true;
	gga_front_shell_stop(disk);
	gga_recover_stop_disk(disk);
	gga_bitmap_stop(disk);
	io_device_unregister(disk, disk_unregistered);
	return 1;
}

static bool
gga_io_type_supported(void *ctxt, enum bdev_io_type type)
{
	switch (type) {
	case BDEV_IO_TYPE_READ:
	case BDEV_IO_TYPE_WRITE:
	case BDEV_IO_TYPE_FLUSH:
	case BDEV_IO_TYPE_WRITE_ZEROES:
	case BDEV_IO_TYPE_UNMAP:
	case BDEV_IO_TYPE_RESET:
		return true;
	default:
		return false;
	}
}

/* A front of a shared array serves only while active and assembled. */
static bool
gga_is_accessible(void *ctxt)
{
	return !gga_disk_gated(ctxt);
}

static void
gga_get_health(void *ctxt, struct bdev_health *health)
{
	gga_disk_health(ctxt, health);
}

static struct io_channel *
gga_get_io_channel(void *ctxt)
{
	return io_channel_get(ctxt);
}

/*
 * A front that has not assembled the array (or lets go of its assembly) has
 * not read the members: their states, and the array's, are not known here
 * (as bdev_gga_get_info says).
 */
static bool
front_unread(const struct gga_disk *disk)
{
	bool assembled;

	gga_disk_unready(disk, &assembled);
	return disk->front != NULL && !assembled;
}

static json_t *
members_json(const struct gga_disk *disk)
{
	json_t *members = json_array();
	enum bdev_gga_member_state state;
	bool unread = front_unread(disk);
	char role[16];
	uint32_t i;

	for (i = 0; i < disk->n; i++) {
		state = gga_member_state(&disk->members[i]);
		json_array_append_new(members,
				      json_pack("{s:s, s:s, s:s}", "role",
						gga_role_of(disk, i, role, sizeof(role)), "name",
						disk->members[i].name, "state",
						unread ? "unknown" :
							 bdev_gga_member_state_name(state)));
	}
	return members;
}

static void
gga_dump_info_json(void *ctxt, json_t *info)
{
	struct gga_disk *disk = ctxt;
	char uuid[UUID_STR_LEN];

	uuid_format(disk->array_uuid, uuid);
	json_object_set_new(info, "gga",
			    json_pack("{s:i, s:i, s:s, s:s, s:i, s:b, s:s, s:o}", "k", (int)disk->k,
				      "m", (int)disk->m, "matrix_type",
				      gga_matrix_name(disk->matrix), "array_uuid", uuid,
				      "recovery_read_every_n", (int)disk->recovery_read_every_n,
				      "repair", disk->repair, "state",
				      front_unread(disk) ?
					      "unknown" :
					      bdev_gga_state_name(gga_disk_state(disk)),
				      "members", members_json(disk)));
}

/* ["M0", "M1", ...]: the base names of members first .. first + count - 1. */
static json_t *
member_names_json(const struct gga_disk *disk, uint32_t first, uint32_t count)
{
	json_t *names = json_array();
	uint32_t i;

	for (i = first; i < first + count; i++) {
		json_array_append_new(names, json_string(disk->members[i].name));
	}
	return names;
}

static void
gga_write_config_json(struct bdev *bdev, json_t *config)
{
	struct gga_disk *disk = bdev->ctxt;
	json_t *params;
	char uuid[UUID_STR_LEN];

	uuid_format(disk->array_uuid, uuid);
	/*
	 * Mode auto recreates it both ways: it assembles the same members, and
	 * formats fresh ones (e.g. malloc bases in a new process) with the same uuid.
	 */
	/* Unsigned 32-bit options as json_int_t: an int would write 2^31 and above negative. */
	params = json_pack("{s:s, s:s, s:I, s:b, s:s, s:s, s:b, s:I, s:I, s:I}", "name", bdev->name,
			   "matrix_type", gga_matrix_name(disk->matrix), "recovery_read_every_n",
			   (json_int_t)disk->recovery_read_every_n, "repair", disk->repair, "mode",
			   "auto", "uuid", uuid, "auto_readd", disk->auto_readd,
			   "rebuild_rate_mib_s", (json_int_t)disk->rebuild_rate,
			   "member_error_limit", (json_int_t)disk->err_limit,
			   "member_error_window_s", (json_int_t)disk->err_window_s);
	if (params != NULL) {
		json_object_set_new(params, "member_timeout_ms",
				    json_integer((json_int_t)disk->timeout_ms));
		/*
		 * Replayed at start-up, the bdev must not be lost because members
		 * are still down then: it waits for them (a front too: it starts
		 * with the bases there are and opens the others as they appear).
		 */
		json_object_set_new(params, "wait_for_members", json_true());
	}
	/*
	 * The members' geometry: a restart while none of them is reachable
	 * registers the bdev from it and waits (bdev_gga_create).
	 */
	if (params != NULL && disk->frag_size != 0) {
		json_object_set_new(params, "member_block_size",
				    json_integer((json_int_t)disk->frag_size));
		json_object_set_new(params, "member_md_size",
				    json_integer((json_int_t)disk->md_size));
		json_object_set_new(params, "member_num_blocks",
				    json_integer((json_int_t)disk->member_blocks));
	}
	/* (A front that has not assembled the members yet does not know their region size.) */
	if (params != NULL && disk->region_shift != 0) {
		json_object_set_new(params, "bitmap_region_kib",
				    json_integer(
					    (json_int_t)((1ull << disk->region_shift) / 1024)));
	}
	if (params != NULL && disk->front != NULL) {
		struct bdev_gga_info fi;

		memset(&fi, 0, sizeof(fi));
		gga_front_shell_info(disk, &fi);
		json_object_set_new(params, "front_id", json_integer(fi.front_id));
		json_object_set_new(params, "lease_ms", json_integer((json_int_t)fi.lease_ms));
		json_object_set_new(params, "standby", json_boolean(fi.standby));
	}
	if (params == NULL) {
		ERRLOG("gga bdev '%s': out of memory writing its configuration\n", bdev->name);
		return;
	}
	if (disk->k == 2 && disk->m == 1) {
		json_object_set_new(params, "data_1", json_string(disk->members[0].name));
		json_object_set_new(params, "data_2", json_string(disk->members[1].name));
		json_object_set_new(params, "parity", json_string(disk->members[2].name));
	} else {
		json_object_set_new(params, "data_members", member_names_json(disk, 0, disk->k));
		json_object_set_new(params, "parity_members",
				    member_names_json(disk, disk->k, disk->m));
	}
	json_array_append_new(config, json_pack("{s:s, s:o}", "method", "bdev_gga_create", "params",
						params));
}

/* The members' bdevs, by the names the configuration gives (NULL: not there). */
static int
gga_get_bases(void *ctxt, struct bdev **bases, int max)
{
	struct gga_disk *disk = ctxt;
	int i;

	for (i = 0; i < (int)disk->n && i < max; i++) {
		bases[i] = bdev_get_by_name(disk->members[i].name);
	}
	return i;
}

static const struct bdev_fn_table gga_fn_table = {
	.destruct = gga_destruct,
	.submit_request = gga_submit_request,
	.io_type_supported = gga_io_type_supported,
	.get_io_channel = gga_get_io_channel,
	.dump_info_json = gga_dump_info_json,
	.write_config_json = gga_write_config_json,
	.get_bases = gga_get_bases,
	.is_accessible = gga_is_accessible,
	.get_health = gga_get_health,
};

/* Member buffers: small elements for small requests, chunk-sized ones for large. */
static int
create_pools(struct gga_disk *disk)
{
	uint32_t align = 64, member_align = 1, i;
	size_t iov_area;
	char name[64];

	for (i = 0; i < disk->n; i++) {
		/* An absent member gets its buffers through a replace (same geometry, checked). */
		if (disk->members[i].bdev != NULL) {
			member_align = GGA_MAX(member_align,
					       bdev_get_buf_align(disk->members[i].bdev));
		}
	}
	align = GGA_MAX(align, member_align);
	/* The caller's buffer has no alignment guarantee (buf_align 1). */
	disk->direct_reads = member_align == 1;
	iov_area = (size_t)disk->k * GGA_DIRECT_MAX_IOVS * sizeof(struct iovec);
	disk->small_blocks = GGA_MAX(1u, GGA_SMALL_CHUNK_BYTES / disk->block_size);
	disk->large_blocks = GGA_MAX(1u, GGA_CHUNK_BYTES / disk->block_size);
	disk->small_stride = (uint32_t)align_up((uint64_t)disk->small_blocks * disk->mbs, align);
	disk->large_stride = (uint32_t)align_up((uint64_t)disk->large_blocks * disk->mbs, align);

	snprintf(name, sizeof(name), "gga_%s_small", disk->bdev.name);
	disk->small_pool = mempool_create(name, GGA_SMALL_POOL_COUNT,
					  (size_t)disk->n * disk->small_stride + iov_area,
					  GGA_SMALL_POOL_CACHE);
	snprintf(name, sizeof(name), "gga_%s_large", disk->bdev.name);
	disk->large_pool = mempool_create(name, GGA_LARGE_POOL_COUNT,
					  (size_t)disk->n * disk->large_stride + iov_area,
					  GGA_LARGE_POOL_CACHE);
	if (disk->small_pool == NULL || disk->large_pool == NULL) {
		return -ENOMEM;
	}
	return 0;
}

int
gga_disk_register(struct gga_disk *disk)
{
	int rc;

	rc = create_pools(disk);
	if (rc != 0) {
		return rc;
	}
	disk->sb_buf = env_dma_zmalloc((size_t)disk->n * disk->sb_blocks * disk->mbs, 0);
	if (disk->sb_buf == NULL) {
		return -ENOMEM;
	}
	disk->bdev.product_name = "gga disk";
	disk->bdev.block_size = disk->block_size;
	disk->bdev.md_size = 0;
	disk->bdev.num_blocks = disk->member_blocks - disk->data_offset;
	disk->bdev.buf_align = 1;
	memcpy(disk->bdev.uuid, disk->array_uuid, sizeof(disk->bdev.uuid));
	disk->bdev.ctxt = disk;
	disk->bdev.fn_table = &gga_fn_table;
	disk->bdev.module = &gga_bdev_module;

	io_device_register(disk, gga_channel_create, gga_channel_destroy,
			   sizeof(struct gga_channel), disk->bdev.name);
	rc = bdev_register(&disk->bdev);
	if (rc != 0) {
		/* No channel can exist yet, so nothing refers to the disk after this. */
		io_device_unregister(disk, NULL);
		return rc;
	}
	gga_disk_link(disk);
	if (disk->front == NULL && !disk->waiting) {
		gga_disk_start(disk);
	}
	return 0;
}

void
gga_disk_start(struct gga_disk *disk)
{
	gga_bitmap_start(disk);
	gga_app_watchdog_start(disk);
	gga_recover_start_disk(disk);
}

/* ---------------------------------------------------------------------- */
/* A front that stepped down lets go of its assembly                      */
/* ---------------------------------------------------------------------- */

/* The quiet wait of gga_disk_forget() looks this often. */
#define FORGET_POLL_US (10u * 1000u)

/*
 * Nothing of the old assembly runs: no superblock or bitmap write, no pass,
 * probe or app-thread member I/O (the shell's own reservation commands among
 * them: it sends none while stepped down), no replace, no front request in
 * flight (a gated disk fails each at its next step).
 */
static bool
disk_quiet(const struct gga_disk *disk)
{
	uint32_t i;

	if (gga_disk_app_busy(disk) ||
	    __atomic_load_n(&disk->front_ios, __ATOMIC_ACQUIRE) !=
		    __atomic_load_n(&disk->front_done, __ATOMIC_ACQUIRE)) {
		return false;
	}
	for (i = 0; i < disk->n; i++) {
		if (disk->members[i].replace_op != NULL) {
			return false;
		}
	}
	return true;
}

/*
 * Back to what bdev_gga_create() leaves before an assembly: members opened
 * (or absent), no state, record, bitmap, generation window, checkpoint or
 * error count. The next assembly takes all of it from the superblocks.
 */
static void
disk_reset(struct gga_disk *disk)
{
	struct gga_member *member;
	uint32_t i;

	poller_unregister(&disk->app_watchdog);
	gga_bitmap_destroy(disk);
	for (i = 0; i < disk->n; i++) {
		member = &disk->members[i];
		if (member->desc != NULL && !member->removing) {
			__atomic_store_n(&member->reason, NULL, __ATOMIC_RELEASE);
			__atomic_store_n(&member->state, BDEV_GGA_MEMBER_ONLINE, __ATOMIC_RELEASE);
		} else {
			__atomic_store_n(&member->reason, "base bdev does not exist",
					 __ATOMIC_RELEASE);
			__atomic_store_n(&member->state, BDEV_GGA_MEMBER_ABSENT, __ATOMIC_RELEASE);
		}
		member->needs = GGA_LC_NEEDS_NONE;
		member->foreign = false;
		member->forced = false;
		member->sb_events = 0;
		__atomic_store_n(&member->err_count, 0, __ATOMIC_RELAXED);
		__atomic_store_n(&member->err_start, 0, __ATOMIC_RELAXED);
		__atomic_store_n(&member->faulted, false, __ATOMIC_RELEASE);
	}
	disk->live_mask = disk->all_mask;
	disk->write_mask = disk->all_mask;
	__atomic_store_n(&disk->persisted, 0, __ATOMIC_RELEASE);
	disk->sb_rec_mask = 0;
	disk->next_gen = 0;
	disk->gen_limit = 0;
	disk->epoch_busy = false;
	disk->epoch_wanted = false;
	__atomic_store_n(&disk->fault_asked, 0, __ATOMIC_RELEASE);
	memset(disk->charged, 0, sizeof(disk->charged));
	memset(disk->lost_seen, 0, sizeof(disk->lost_seen));
	disk->sb_again = false;
	disk->sb_epoch = false;
	disk->events = 0;
	disk->sb_events = 0;
	disk->bitmap_events = 0;
	memset(&disk->bm_clear, 0, sizeof(disk->bm_clear));
	disk->sb_clear_stage = GGA_LC_CLEAR_IDLE;
	disk->sb_sync_mask = 0;
	memset(&disk->sb_record, 0, sizeof(disk->sb_record));
	disk->rec_mask = 0;
	disk->rec_offset = 0;
	disk->resume_ok = false;
	disk->rec_retry_ticks = 0;
	disk->pass_targets = 0;
	disk->lc_failed = 0;
	disk->pass_stop = false;
	disk->pass_rebuild = false;
	disk->check_marked = false;
	/* What it knew unrecoverable may have been rewritten by the other front. */
	__atomic_store_n(&disk->lost_blocks, 0, __ATOMIC_RELEASE);
	__atomic_store_n(&disk->front_fenced, false, __ATOMIC_RELEASE);
}

static int
forget_poll(void *arg)
{
	struct gga_disk *disk = arg;

	if (!disk->destructing && !disk_quiet(disk)) {
		return POLLER_IDLE;
	}
	poller_unregister(&disk->forget_poller);
	disk->pending_ops--;
	if (disk->destructing) {
		gga_disk_try_free(disk);
		return POLLER_BUSY;
	}
	disk_reset(disk);
	NOTICELOG("gga bdev '%s': its assembly is let go; the members are read again when this "
		  "front is next active\n",
		  disk->bdev.name);
	disk->forgotten(disk);
	return POLLER_BUSY;
}

int
gga_disk_forget(struct gga_disk *disk, void (*done)(struct gga_disk *disk))
{
	if (disk->forget_poller != NULL) {
		return -EBUSY;
	}
	if (disk->destructing) {
		return -ENODEV;
	}
	/* The pass ends at its next chunk; probes and sweeps start no more. */
	gga_recover_stop_disk(disk);
	gga_bitmap_stop(disk);
	disk->forget_poller = poller_register(forget_poll, disk, FORGET_POLL_US, "gga_forget");
	if (disk->forget_poller == NULL) {
		return -ENOMEM;
	}
	disk->forgotten = done;
	disk->pending_ops++;
	return 0;
}

/* ---------------------------------------------------------------------- */
/* Deletion and information                                                */
/* ---------------------------------------------------------------------- */

int
bdev_gga_hand_over(const char *name)
{
	struct gga_disk *disk = gga_disk_lookup(name);

	if (disk == NULL) {
		return -ENODEV;
	}
	return gga_front_shell_hand_over(disk);
}

int
bdev_gga_ready(const char *name, char *msg, size_t len)
{
	struct gga_disk *disk = gga_disk_lookup(name);

	if (disk == NULL) {
		snprintf(msg, len, "gga bdev '%s' does not exist", name != NULL ? name : "");
		return -ENODEV;
	}
	return gga_disk_unready_msg(disk, msg, len) ? -EAGAIN : 0;
}

int
bdev_gga_delete(const char *name, bdev_gga_delete_cb cb, void *cb_arg)
{
	if (name == NULL) {
		return -ENODEV;
	}
	return bdev_unregister_by_name(name, &gga_bdev_module, cb, cb_arg);
}

struct info_ctx {
	struct gga_disk *disk;
	struct bdev_gga_info *info;
	bdev_gga_info_cb cb;
	void *cb_arg;
};

static void
info_channel(struct io_channel_iter *i)
{
	struct info_ctx *ctx = io_channel_iter_get_ctx(i);
	struct gga_channel *ch = io_channel_get_ctx(io_channel_iter_get_channel(i));

	gga_counters_add(&ctx->info->counters, &ch->stats);
	io_channel_iter_continue(i, 0);
}

static void
info_done(struct io_channel_iter *i, int status)
{
	struct info_ctx *ctx = io_channel_iter_get_ctx(i);
	struct gga_disk *disk = ctx->disk;
	struct bdev_gga_info *info = ctx->info;
	uint32_t m;

	pthread_mutex_lock(&disk->gone_mutex);
	gga_counters_add(&info->counters, &disk->gone);
	pthread_mutex_unlock(&disk->gone_mutex);
	/* States may have changed during the walk: report them as they are now. */
	for (m = 0; m < disk->n; m++) {
		info->members[m].state = gga_member_state(&disk->members[m]);
		info->members[m].reason = __atomic_load_n(&disk->members[m].reason,
							  __ATOMIC_ACQUIRE);
		/* A member out of sync needs a resync unless it is known to need more. */
		info->members[m].needs = info->members[m].state == BDEV_GGA_MEMBER_ONLINE ?
						 NULL :
					 disk->members[m].needs == GGA_LC_NEEDS_REBUILD ?
						 "rebuild" :
						 "resync";
		info->members[m].faulted = __atomic_load_n(&disk->members[m].faulted,
							   __ATOMIC_ACQUIRE);
		info->members[m].errors = __atomic_load_n(&disk->members[m].err_count,
							  __ATOMIC_RELAXED);
	}
	info->member_error_limit = disk->err_limit;
	info->member_error_window_s = disk->err_window_s;
	info->member_timeout_ms = disk->timeout_ms;
	gga_front_shell_info(disk, info);
	if (__atomic_load_n(&disk->waiting, __ATOMIC_ACQUIRE)) {
		/* (Out of memory: reported as not waiting; the state still says failed.) */
		info->waiting = strdup(disk->wait_msg);
	}
	info->events = disk->events;
	info->bitmap_region_kib = (uint32_t)((1ull << disk->region_shift) / 1024);
	info->bitmap_regions = gga_bitmap_regions_count(disk);
	info->bitmap_dirty = gga_bitmap_dirty(disk);
	info->auto_readd = disk->auto_readd;
	info->rebuild_rate_mib_s = disk->rebuild_rate;
	gga_recover_info(disk, &info->recovery, &info->scrub);
	info->last_recovery = disk->last_recovery;
	info->state = gga_disk_state(disk);
	info->unrecoverable_blocks = __atomic_load_n(&disk->lost_blocks, __ATOMIC_RELAXED);
	info->generation = __atomic_load_n(&disk->next_gen, __ATOMIC_RELAXED);
	disk->pending_ops--;
	ctx->cb(ctx->cb_arg, 0);
	free(ctx);
	gga_disk_try_free(disk);
}

void
bdev_gga_info_clear(struct bdev_gga_info *info)
{
	uint32_t i;

	free(info->name);
	free(info->waiting);
	for (i = 0; i < BDEV_GGA_MAX_MEMBERS; i++) {
		free(info->members[i].name);
	}
	memset(info, 0, sizeof(*info));
}

int
bdev_gga_get_info(const char *name, struct bdev_gga_info *info, bdev_gga_info_cb cb, void *cb_arg)
{
	struct bdev *bdev = name != NULL ? bdev_get_by_name(name) : NULL;
	struct gga_disk *disk;
	struct info_ctx *ctx;
	uint32_t i;

	if (bdev == NULL || bdev->module != &gga_bdev_module) {
		return -ENODEV;
	}
	disk = bdev->ctxt;
	if (disk->channels_gone) {
		return -ENODEV;
	}
	ctx = calloc(1, sizeof(*ctx));
	if (ctx == NULL) {
		return -ENOMEM;
	}
	memset(info, 0, sizeof(*info));
	info->name = strdup(disk->bdev.name);
	for (i = 0; i < disk->n; i++) {
		info->members[i].name = strdup(disk->members[i].name);
		info->members[i].index = i;
		if (info->members[i].name == NULL) {
			bdev_gga_info_clear(info);
			free(ctx);
			return -ENOMEM;
		}
	}
	if (info->name == NULL) {
		bdev_gga_info_clear(info);
		free(ctx);
		return -ENOMEM;
	}
	info->block_size = disk->block_size;
	info->num_blocks = disk->bdev.num_blocks;
	info->k = disk->k;
	info->m = disk->m;
	info->matrix = disk->matrix;
	memcpy(info->array_uuid, disk->array_uuid, 16);
	info->recovery_read_every_n = disk->recovery_read_every_n;
	info->repair = disk->repair;
	info->num_members = disk->n;

	ctx->disk = disk;
	ctx->info = info;
	ctx->cb = cb;
	ctx->cb_arg = cb_arg;
	disk->pending_ops++;
	io_device_for_each_channel(disk, info_channel, ctx, info_done);
	return 0;
}

/* ---------------------------------------------------------------------- */
/* Module                                                                  */
/* ---------------------------------------------------------------------- */

/* The module, once at start-up; its RPCs register apart (bdev_gga_rpc_register). */
void
bdev_gga_module_register(void)
{
	bdev_module_register(&gga_bdev_module);
}
