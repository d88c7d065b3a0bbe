/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Channels of a gga disk (one per thread: a channel to every member, the
 * codec's scratch, the stall watchdog) and the app thread's watchdog over
 * its own member I/O (superblock and bitmap writes, probes, recovery
 * chunks). A member that holds I/O for member_timeout_ms is failed and
 * reset.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "gga/bdev_module.h"
#include "gga/log.h"
#include "gga/util.h"

#include "bdev_gga_channel.h"
#include "bdev_gga_member.h"
#include "bdev_gga_remove.h"

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
			ch->member_kept[i] = false;
			continue;
		}
		if (ch->member_since[i] == 0 || ch->member_done[i] != ch->member_seen[i]) {
			ch->member_seen[i] = ch->member_done[i];
			ch->member_since[i] = now;
			ch->member_kept[i] = false;
			continue;
		}
		if (timeout == 0 || ch->member_reset[i] ||
		    now - ch->member_since[i] < (uint64_t)timeout * ticks_hz() / 1000) {
			continue;
		}
		/* Asked again every round of a stall kept: k others may be online by now. */
		if (!gga_member_stall(disk, i, "stalled: no answer within member_timeout_ms")) {
			if (!ch->member_kept[i]) {
				WARNLOG("gga bdev '%s': member '%s' has not answered for %u ms; kept "
					"(failing it would leave fewer than %u members online): its "
					"requests wait for it\n",
					disk->bdev.name, disk->members[i].name, timeout, disk->k);
				ch->member_kept[i] = true;
			}
			continue;
		}
		WARNLOG("gga bdev '%s': member '%s' has not answered for %u ms; failing and "
			"resetting it\n",
			disk->bdev.name, disk->members[i].name, timeout);
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

uint32_t
gga_app_watch_round(struct gga_disk *disk, bool fail)
{
	uint32_t timeout = __atomic_load_n(&disk->timeout_ms, __ATOMIC_RELAXED), i, stalled = 0;
	struct gga_member *member;
	uint64_t now = ticks_get();
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
			member->app_kept = false;
			continue;
		}
		if (timeout == 0 || member->app_resetting ||
		    now - member->app_since < (uint64_t)timeout * ticks_hz() / 1000) {
			continue;
		}
		if (fail &&
		    !gga_member_stall(disk, i, "stalled: no answer within member_timeout_ms")) {
			/* Asked again next round; logged once a stall. */
			if (!member->app_kept) {
				WARNLOG("gga bdev '%s': member '%s' has not answered the superblock, "
					"bitmap or recovery I/O for %u ms; kept (failing it would "
					"leave fewer than %u members online): the I/O waits for it\n",
					disk->bdev.name, member->name, timeout, disk->k);
				member->app_kept = true;
			}
			continue;
		}
		member->app_kept = false;
		stalled |= 1u << i;
		/* Once per stall: a new one is timed from now. */
		member->app_since = now;
		if (!member->reset_supported) {
			continue;
		}
		rc = bdev_reset(member->desc, member->app_ch, app_watchdog_reset_done, member);
		if (rc == 0) {
			member->app_resetting = true;
			member->app_io++;
		}
	}
	return stalled;
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
	uint32_t stalled = gga_app_watch_round(disk, true), i;

	for (i = 0; i < disk->n; i++) {
		if (!(stalled & (1u << i))) {
			continue;
		}
		WARNLOG("gga bdev '%s': member '%s' has not answered the superblock, bitmap or "
			"recovery I/O for %u ms; failed and reset\n",
			disk->bdev.name, disk->members[i].name,
			__atomic_load_n(&disk->timeout_ms, __ATOMIC_RELAXED));
	}
	return stalled != 0 ? POLLER_BUSY : POLLER_IDLE;
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
