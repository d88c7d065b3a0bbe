/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Hot-remove of a member and the end of a gga disk: a member's channels,
 * claim and descriptor released (at once, or once its app-thread I/O has
 * ended), the base going away or coming back (gga_member_event_cb), the
 * disk freed once nothing asynchronous is left (gga_disk_try_free), the
 * list of registered disks and the module itself.
 */
#include <assert.h>
#include <stdlib.h>

#include "gga/bdev_module.h"
#include "gga/log.h"
#include "gga/util.h"

#include "bdev_gga_member.h"
#include "bdev_gga_remove.h"

/* Registered gga bdevs, in creation order (app thread). */
static TAILQ_HEAD(, gga_disk) g_disks = TAILQ_HEAD_INITIALIZER(g_disks);
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
/* The end of a disk                                                       */
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
	pthread_mutex_destroy(&disk->stall_mutex);
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

/* Superblock, bitmap or recovery work (or a message about it) is under way. */
bool
gga_disk_app_busy(const struct gga_disk *disk)
{
	return disk->sb_inflight || __atomic_load_n(&disk->sb_kicked, __ATOMIC_ACQUIRE) ||
	       gga_bitmap_busy(disk) || gga_recover_busy(disk);
}

/*
 * The last step of a deletion, once no channel, walk, probe, superblock or
 * bitmap write, or message about one, is left.
 */
void
gga_disk_try_free(struct gga_disk *disk)
{
	uint32_t i;

	if (!disk->channels_gone || disk->pending_ops > 0 || gga_disk_app_busy(disk)) {
		return;
	}
	if (disk->close_step != NULL && disk->close_step(disk)) {
		/* A clean close has writes under way: their end calls again. */
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
