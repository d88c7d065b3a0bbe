/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The bdev I/O path: per-thread bdev channels, submission and completion,
 * NOMEM requeueing, waiting for a free bdev_io, reset, status mapping and
 * statistics.
 *
 * Per I/O the layer does one mempool get and put (the per-thread cache), one
 * ticks_get() at submission and one at completion, and touches only the
 * submitting thread's channel: no locks, no allocation, no syscalls.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "gga/bdev.h"
#include "gga/bdev_module.h"
#include "gga/env.h"
#include "gga/log.h"
#include "gga/nvme_spec.h"
#include "gga/thread.h"
#include "gga/util.h"

#include "bdev_internal.h"

/* How soon to retry NOMEM-queued I/O when nothing outstanding will complete to trigger it. */
#define NOMEM_RETRY_PERIOD_US 100

struct mempool *g_bdev_io_pool;
/* The io_device of the per-thread management channels; only its address matters. */
uint8_t g_bdev_mgmt_device;

/*
 * Statistics.
 */

void
bdev_io_stat_init(struct bdev_io_stat *stat)
{
	memset(stat, 0, sizeof(*stat));
	stat->min_read_latency_ticks = UINT64_MAX;
	stat->min_write_latency_ticks = UINT64_MAX;
}

void
bdev_io_stat_add(struct bdev_io_stat *sum, const struct bdev_io_stat *add)
{
	sum->bytes_read += add->bytes_read;
	sum->num_read_ops += add->num_read_ops;
	sum->bytes_written += add->bytes_written;
	sum->num_write_ops += add->num_write_ops;
	sum->bytes_unmapped += add->bytes_unmapped;
	sum->num_unmap_ops += add->num_unmap_ops;
	sum->num_write_zeroes_ops += add->num_write_zeroes_ops;
	sum->num_flush_ops += add->num_flush_ops;
	sum->num_reset_ops += add->num_reset_ops;
	sum->num_failed_ops += add->num_failed_ops;
	sum->read_latency_ticks += add->read_latency_ticks;
	sum->write_latency_ticks += add->write_latency_ticks;
	sum->unmap_latency_ticks += add->unmap_latency_ticks;
	sum->max_read_latency_ticks = GGA_MAX(sum->max_read_latency_ticks,
					      add->max_read_latency_ticks);
	sum->max_write_latency_ticks = GGA_MAX(sum->max_write_latency_ticks,
					       add->max_write_latency_ticks);
	sum->min_read_latency_ticks = GGA_MIN(sum->min_read_latency_ticks,
					      add->min_read_latency_ticks);
	sum->min_write_latency_ticks = GGA_MIN(sum->min_write_latency_ticks,
					       add->min_write_latency_ticks);
}

static inline void
bdev_io_account(struct bdev_channel *ch, const struct bdev_io *io, uint64_t now)
{
	struct bdev_io_stat *stat = &ch->stat;
	const struct bdev *bdev = io->bdev;
	uint64_t ticks = now - io->internal.submit_ticks;
	uint64_t bytes = io->u.num_blocks * (bdev->block_size + bdev->md_size);

	if (unlikely(io->internal.status != BDEV_IO_STATUS_SUCCESS)) {
		stat->num_failed_ops++;
		return;
	}
	switch (io->type) {
	case BDEV_IO_TYPE_READ:
		stat->bytes_read += bytes;
		stat->num_read_ops++;
		stat->read_latency_ticks += ticks;
		if (ticks > stat->max_read_latency_ticks) {
			stat->max_read_latency_ticks = ticks;
		}
		if (ticks < stat->min_read_latency_ticks) {
			stat->min_read_latency_ticks = ticks;
		}
		break;
	case BDEV_IO_TYPE_WRITE:
		stat->bytes_written += bytes;
		stat->num_write_ops++;
		stat->write_latency_ticks += ticks;
		if (ticks > stat->max_write_latency_ticks) {
			stat->max_write_latency_ticks = ticks;
		}
		if (ticks < stat->min_write_latency_ticks) {
			stat->min_write_latency_ticks = ticks;
		}
		break;
	case BDEV_IO_TYPE_UNMAP:
		stat->bytes_unmapped += bytes;
		stat->num_unmap_ops++;
		stat->unmap_latency_ticks += ticks;
		break;
	case BDEV_IO_TYPE_WRITE_ZEROES:
		stat->num_write_zeroes_ops++;
		break;
	case BDEV_IO_TYPE_FLUSH:
		stat->num_flush_ops++;
		break;
	case BDEV_IO_TYPE_RESET:
		stat->num_reset_ops++;
		break;
	default:
		break;
	}
}

/*
 * Channels.
 */

/*
 * Completions that happened inside submit_request wait here for the next
 * iteration of the thread, so a submit call never runs its own callback.
 */
static int
mgmt_poll(void *ctx)
{
	struct bdev_mgmt_channel *mgmt = ctx;
	struct bdev_io_tailq done;
	struct bdev_io *io;

	if (TAILQ_EMPTY(&mgmt->deferred)) {
		return POLLER_IDLE;
	}
	/* Callbacks may submit more I/O that completes inline: that waits for the next round. */
	TAILQ_INIT(&done);
	TAILQ_CONCAT(&done, &mgmt->deferred, internal.link);
	while ((io = TAILQ_FIRST(&done)) != NULL) {
		TAILQ_REMOVE(&done, io, internal.link);
		io->internal.cb(io, io->internal.status == BDEV_IO_STATUS_SUCCESS,
				io->internal.cb_arg);
	}
	return POLLER_BUSY;
}

int
bdev_mgmt_channel_create_cb(void *io_device, void *ctx_buf)
{
	struct bdev_mgmt_channel *mgmt = ctx_buf;

	TAILQ_INIT(&mgmt->deferred);
	TAILQ_INIT(&mgmt->io_wait);
	mgmt->poller = poller_register(mgmt_poll, mgmt, 0, "bdev_completions");
	if (mgmt->poller == NULL) {
		ERRLOG("thread %s: cannot register the bdev completion poller\n",
		       thread_get_name(thread_get_current()));
		return -ENOMEM;
	}
	return 0;
}

void
bdev_mgmt_channel_destroy_cb(void *io_device, void *ctx_buf)
{
	struct bdev_mgmt_channel *mgmt = ctx_buf;

	if (!TAILQ_EMPTY(&mgmt->deferred)) {
		ERRLOG("thread %s: bdev completions still pending at channel teardown\n",
		       thread_get_name(thread_get_current()));
	}
	if (!TAILQ_EMPTY(&mgmt->io_wait)) {
		WARNLOG("thread %s: bdev_io waiters dropped at channel teardown\n",
			thread_get_name(thread_get_current()));
	}
	poller_unregister(&mgmt->poller);
}

int
bdev_channel_create_cb(void *io_device, void *ctx_buf)
{
	struct bdev *bdev = io_device;
	struct bdev_channel *ch = ctx_buf;

	ch->bdev = bdev;
	ch->thread = thread_get_current();
	ch->outstanding = 0;
	ch->resets = 0;
	ch->retrying = false;
	ch->nomem_poller = NULL;
	TAILQ_INIT(&ch->nomem_ios);
	bdev_io_stat_init(&ch->stat);

	ch->mgmt_ch = io_channel_get(&g_bdev_mgmt_device);
	if (ch->mgmt_ch == NULL) {
		ERRLOG("bdev %s: no bdev management channel (is the bdev subsystem started?)\n",
		       bdev->name);
		return -ENOMEM;
	}
	ch->mgmt = io_channel_get_ctx(ch->mgmt_ch);
	ch->module_ch = bdev->fn_table->get_io_channel(bdev->ctxt);
	if (ch->module_ch == NULL) {
		ERRLOG("bdev %s: module %s gave no I/O channel\n", bdev->name, bdev->module->name);
		io_channel_put(ch->mgmt_ch);
		return -ENOMEM;
	}
	return 0;
}

void
bdev_channel_destroy_cb(void *io_device, void *ctx_buf)
{
	struct bdev *bdev = io_device;
	struct bdev_channel *ch = ctx_buf;
	struct bdev_internal *internal = bdev->internal;

	if (ch->outstanding != 0 || !TAILQ_EMPTY(&ch->nomem_ios)) {
		ERRLOG("bdev %s: channel destroyed with %" PRIu64 " I/Os outstanding\n", bdev->name,
		       ch->outstanding);
	}
	poller_unregister(&ch->nomem_poller);
	io_channel_put(ch->module_ch);
	io_channel_put(ch->mgmt_ch);

	pthread_mutex_lock(&internal->stat_mutex);
	bdev_io_stat_add(&internal->stat_gone, &ch->stat);
	pthread_mutex_unlock(&internal->stat_mutex);
}

struct io_channel *
bdev_get_io_channel(struct bdev_desc *desc)
{
	return io_channel_get(desc->bdev);
}

/*
 * Submission and completion.
 */

static inline void
submit_to_module(struct bdev_channel *ch, struct bdev_io *io)
{
	ch->outstanding++;
	io->internal.in_submit = true;
	io->bdev->fn_table->submit_request(ch->module_ch, io);
	io->internal.in_submit = false;
}

/* Account a finished I/O and run its callback now, or defer it if we are inside its submit. */
static inline void
bdev_io_finish(struct bdev_channel *ch, struct bdev_io *io, uint64_t now)
{
	bdev_io_account(ch, io, now);
	if (unlikely(io->internal.in_submit)) {
		TAILQ_INSERT_TAIL(&ch->mgmt->deferred, io, internal.link);
		return;
	}
	io->internal.cb(io, io->internal.status == BDEV_IO_STATUS_SUCCESS, io->internal.cb_arg);
}

static void retry_nomem(struct bdev_channel *ch);

static int
nomem_poll(void *ctx)
{
	struct bdev_channel *ch = ctx;

	retry_nomem(ch);
	/* Once something is outstanding again, its completion drives the retries. */
	if (TAILQ_EMPTY(&ch->nomem_ios) || ch->outstanding > 0) {
		poller_unregister(&ch->nomem_poller);
	}
	return POLLER_BUSY;
}

/* Make sure something will retry the NOMEM queue. */
static void
nomem_arm(struct bdev_channel *ch)
{
	if (ch->outstanding > 0 || ch->nomem_poller != NULL || ch->retrying) {
		return;
	}
	ch->nomem_poller = poller_register(nomem_poll, ch, NOMEM_RETRY_PERIOD_US, "bdev_nomem");
	if (ch->nomem_poller == NULL) {
		ERRLOG("bdev %s: cannot register the NOMEM retry poller; "
		       "queued I/O waits for the next completion\n",
		       ch->bdev->name);
	}
}

/* Resubmit NOMEM-queued I/O in order until the module pushes back again. */
static void
retry_nomem(struct bdev_channel *ch)
{
	struct bdev_io *io;

	if (ch->retrying) {
		return;
	}
	ch->retrying = true;
	while ((io = TAILQ_FIRST(&ch->nomem_ios)) != NULL) {
		TAILQ_REMOVE(&ch->nomem_ios, io, internal.link);
		io->internal.status = BDEV_IO_STATUS_PENDING;
		submit_to_module(ch, io);
		if (io->internal.status == BDEV_IO_STATUS_NOMEM) {
			break;
		}
	}
	ch->retrying = false;
	if (!TAILQ_EMPTY(&ch->nomem_ios)) {
		nomem_arm(ch);
	}
}

/* A new I/O on a channel that is resetting or has NOMEM-queued I/O. */
static void
bdev_io_submit_slow(struct bdev_channel *ch, struct bdev_io *io)
{
	if (ch->resets > 0) {
		io->internal.status = BDEV_IO_STATUS_ABORTED;
		io->internal.in_submit = true;
		bdev_io_finish(ch, io, ticks_get());
		return;
	}
	/* Queue behind the bounced ones so they are not starved by new arrivals. */
	TAILQ_INSERT_TAIL(&ch->nomem_ios, io, internal.link);
	nomem_arm(ch);
}

static inline void
bdev_io_submit(struct bdev_channel *ch, struct bdev_io *io)
{
	if (likely(TAILQ_EMPTY(&ch->nomem_ios) && ch->resets == 0)) {
		submit_to_module(ch, io);
		return;
	}
	bdev_io_submit_slow(ch, io);
}

static inline int
bdev_io_check(const struct bdev_desc *desc, struct bdev *bdev, enum bdev_io_type type,
	      uint64_t offset_blocks, uint64_t num_blocks)
{
	if (unlikely(__atomic_load_n(&bdev->internal->state, __ATOMIC_RELAXED) !=
		     BDEV_STATE_READY)) {
		return -ENODEV;
	}
	if (unlikely(num_blocks == 0 || num_blocks > bdev->num_blocks ||
		     offset_blocks > bdev->num_blocks - num_blocks)) {
		return -EINVAL;
	}
	if (unlikely(type != BDEV_IO_TYPE_READ && !desc->write)) {
		return -EBADF;
	}
	if (unlikely(!bdev->fn_table->io_type_supported(bdev->ctxt, type))) {
		return -ENOTSUP;
	}
	return 0;
}

static inline struct bdev_io *
bdev_io_get(struct bdev_desc *desc, struct bdev_channel *ch, enum bdev_io_type type,
	    uint64_t offset_blocks, uint64_t num_blocks, bdev_io_completion_cb cb, void *cb_arg)
{
	struct bdev_io *io = mempool_get(g_bdev_io_pool);

	if (unlikely(io == NULL)) {
		return NULL;
	}
	io->bdev = desc->bdev;
	io->type = type;
	io->u.iovs = NULL;
	io->u.iovcnt = 0;
	io->u.offset_blocks = offset_blocks;
	io->u.num_blocks = num_blocks;
	io->internal.status = BDEV_IO_STATUS_PENDING;
	io->internal.cb = cb;
	io->internal.cb_arg = cb_arg;
	io->internal.desc = desc;
	io->internal.ch = ch;
	io->internal.in_submit = false;
	return io;
}

/*
 * Common body of every block I/O submit. `buf` set: a single buffer (its
 * length is implied); otherwise `iov` (NULL for the types without data).
 */
static inline int
bdev_io_submit_blocks(struct bdev_desc *desc, struct io_channel *_ch, enum bdev_io_type type,
		      void *buf, struct iovec *iov, int iovcnt, uint64_t offset_blocks,
		      uint64_t num_blocks, bdev_io_completion_cb cb, void *cb_arg)
{
	struct bdev *bdev = desc->bdev;
	struct bdev_channel *ch = io_channel_get_ctx(_ch);
	struct bdev_io *io;
	uint64_t len = 0, sum = 0;
	bool has_data = type == BDEV_IO_TYPE_READ || type == BDEV_IO_TYPE_WRITE;
	int rc, i;

	rc = bdev_io_check(desc, bdev, type, offset_blocks, num_blocks);
	if (unlikely(rc != 0)) {
		return rc;
	}
	if (has_data) {
		len = num_blocks * (bdev->block_size + bdev->md_size);
		if (buf == NULL) {
			if (unlikely(iov == NULL || iovcnt <= 0)) {
				return -EINVAL;
			}
			for (i = 0; i < iovcnt; i++) {
				sum += iov[i].iov_len;
			}
			if (unlikely(sum != len)) {
				return -EINVAL;
			}
		}
	}

	io = bdev_io_get(desc, ch, type, offset_blocks, num_blocks, cb, cb_arg);
	if (unlikely(io == NULL)) {
		return -ENOMEM;
	}
	if (buf != NULL) {
		io->internal.iov.iov_base = buf;
		io->internal.iov.iov_len = len;
		io->u.iovs = &io->internal.iov;
		io->u.iovcnt = 1;
	} else if (has_data) {
		io->u.iovs = iov;
		io->u.iovcnt = iovcnt;
	}
	io->internal.submit_ticks = ticks_get();
	bdev_io_submit(ch, io);
	return 0;
}

int
bdev_read_blocks(struct bdev_desc *desc, struct io_channel *ch, void *buf, uint64_t offset_blocks,
		 uint64_t num_blocks, bdev_io_completion_cb cb, void *cb_arg)
{
	if (unlikely(buf == NULL)) {
		return -EINVAL;
	}
	return bdev_io_submit_blocks(desc, ch, BDEV_IO_TYPE_READ, buf, NULL, 0, offset_blocks,
				     num_blocks, cb, cb_arg);
}

int
bdev_readv_blocks(struct bdev_desc *desc, struct io_channel *ch, struct iovec *iov, int iovcnt,
		  uint64_t offset_blocks, uint64_t num_blocks, bdev_io_completion_cb cb,
		  void *cb_arg)
{
	return bdev_io_submit_blocks(desc, ch, BDEV_IO_TYPE_READ, NULL, iov, iovcnt, offset_blocks,
				     num_blocks, cb, cb_arg);
}

int
bdev_write_blocks(struct bdev_desc *desc, struct io_channel *ch, void *buf, uint64_t offset_blocks,
		  uint64_t num_blocks, bdev_io_completion_cb cb, void *cb_arg)
{
	if (unlikely(buf == NULL)) {
		return -EINVAL;
	}
	return bdev_io_submit_blocks(desc, ch, BDEV_IO_TYPE_WRITE, buf, NULL, 0, offset_blocks,
				     num_blocks, cb, cb_arg);
}

int
bdev_writev_blocks(struct bdev_desc *desc, struct io_channel *ch, struct iovec *iov, int iovcnt,
		   uint64_t offset_blocks, uint64_t num_blocks, bdev_io_completion_cb cb,
		   void *cb_arg)
{
	return bdev_io_submit_blocks(desc, ch, BDEV_IO_TYPE_WRITE, NULL, iov, iovcnt, offset_blocks,
				     num_blocks, cb, cb_arg);
}

int
bdev_write_zeroes_blocks(struct bdev_desc *desc, struct io_channel *ch, uint64_t offset_blocks,
			 uint64_t num_blocks, bdev_io_completion_cb cb, void *cb_arg)
{
	return bdev_io_submit_blocks(desc, ch, BDEV_IO_TYPE_WRITE_ZEROES, NULL, NULL, 0,
				     offset_blocks, num_blocks, cb, cb_arg);
}

int
bdev_unmap_blocks(struct bdev_desc *desc, struct io_channel *ch, uint64_t offset_blocks,
		  uint64_t num_blocks, bdev_io_completion_cb cb, void *cb_arg)
{
	return bdev_io_submit_blocks(desc, ch, BDEV_IO_TYPE_UNMAP, NULL, NULL, 0, offset_blocks,
				     num_blocks, cb, cb_arg);
}

int
bdev_flush_blocks(struct bdev_desc *desc, struct io_channel *ch, uint64_t offset_blocks,
		  uint64_t num_blocks, bdev_io_completion_cb cb, void *cb_arg)
{
	return bdev_io_submit_blocks(desc, ch, BDEV_IO_TYPE_FLUSH, NULL, NULL, 0, offset_blocks,
				     num_blocks, cb, cb_arg);
}

int
bdev_nvme_reservation(struct bdev_desc *desc, struct io_channel *_ch,
		      const struct bdev_nvme_resv_cmd *cmd, bdev_io_completion_cb cb, void *cb_arg)
{
	struct bdev *bdev = desc->bdev;
	struct bdev_channel *ch = io_channel_get_ctx(_ch);
	struct bdev_io *io;

	if (__atomic_load_n(&bdev->internal->state, __ATOMIC_RELAXED) != BDEV_STATE_READY) {
		return -ENODEV;
	}
	if (cmd == NULL || cmd->op < BDEV_NVME_RESV_REGISTER || cmd->op > BDEV_NVME_RESV_REPORT ||
	    (cmd->op == BDEV_NVME_RESV_REPORT &&
	     (cmd->buf == NULL || cmd->len < 64 || cmd->len % 4 != 0))) {
		return -EINVAL;
	}
	if (!desc->write) {
		return -EBADF;
	}
	if (!bdev->fn_table->io_type_supported(bdev->ctxt, BDEV_IO_TYPE_NVME_RESV)) {
		return -ENOTSUP;
	}
	io = bdev_io_get(desc, ch, BDEV_IO_TYPE_NVME_RESV, 0, 0, cb, cb_arg);
	if (io == NULL) {
		return -ENOMEM;
	}
	io->u.resv = *cmd;
	io->internal.submit_ticks = ticks_get();
	bdev_io_submit(ch, io);
	return 0;
}

static void reset_unfreeze(struct bdev_io *io);

static void
bdev_io_complete_slow(struct bdev_channel *ch, struct bdev_io *io, enum bdev_io_status status)
{
	if (io->type == BDEV_IO_TYPE_RESET) {
		/* A reset is not requeued: the module could not do it. */
		io->internal.status = status == BDEV_IO_STATUS_NOMEM ? BDEV_IO_STATUS_FAILED :
								       status;
		reset_unfreeze(io);
		return;
	}
	if (ch->resets > 0) {
		/* Requeueing would outlive the reset that is aborting everything. */
		io->internal.status = BDEV_IO_STATUS_ABORTED;
		bdev_io_finish(ch, io, ticks_get());
		return;
	}
	io->internal.status = BDEV_IO_STATUS_NOMEM;
	if (io->internal.in_submit && ch->retrying) {
		/* Bounced again during a retry: keep its place at the head. */
		TAILQ_INSERT_HEAD(&ch->nomem_ios, io, internal.link);
	} else {
		TAILQ_INSERT_TAIL(&ch->nomem_ios, io, internal.link);
	}
	nomem_arm(ch);
}

void
bdev_io_complete(struct bdev_io *io, enum bdev_io_status status)
{
	struct bdev_channel *ch = io->internal.ch;

	ch->outstanding--;
	if (unlikely(status == BDEV_IO_STATUS_NOMEM || io->type == BDEV_IO_TYPE_RESET)) {
		bdev_io_complete_slow(ch, io, status);
		return;
	}
	io->internal.status = status;
	/* The module just freed a resource: give it to the I/O that waited for one first. */
	if (unlikely(!TAILQ_EMPTY(&ch->nomem_ios))) {
		retry_nomem(ch);
	}
	bdev_io_finish(ch, io, ticks_get());
}

void
bdev_io_complete_nvme_status(struct bdev_io *io, int sct, int sc)
{
	if (sct == NVME_SCT_GENERIC && sc == NVME_SC_SUCCESS) {
		bdev_io_complete(io, BDEV_IO_STATUS_SUCCESS);
		return;
	}
	io->internal.nvme_sct = sct;
	io->internal.nvme_sc = sc;
	bdev_io_complete(io, BDEV_IO_STATUS_NVME_ERROR);
}

void
bdev_free_io(struct bdev_io *io)
{
	struct bdev_mgmt_channel *mgmt = io->internal.ch->mgmt;
	struct bdev_io_wait_entry *entry;

	mempool_put(g_bdev_io_pool, io);
	if (unlikely(!TAILQ_EMPTY(&mgmt->io_wait))) {
		entry = TAILQ_FIRST(&mgmt->io_wait);
		TAILQ_REMOVE(&mgmt->io_wait, entry, link);
		entry->cb_fn(entry->cb_arg);
	}
}

int
bdev_queue_io_wait(struct bdev *bdev, struct io_channel *_ch, struct bdev_io_wait_entry *entry)
{
	struct bdev_channel *ch = io_channel_get_ctx(_ch);
	void *io;

	if (entry == NULL || entry->cb_fn == NULL || entry->bdev != bdev || ch->bdev != bdev) {
		return -EINVAL;
	}
	/*
	 * The pool's total count includes other threads' caches, which this
	 * thread cannot use; only a real attempt tells whether a submit here
	 * would succeed.
	 */
	io = mempool_get(g_bdev_io_pool);
	if (io != NULL) {
		mempool_put(g_bdev_io_pool, io);
		return -EINVAL;
	}
	TAILQ_INSERT_TAIL(&ch->mgmt->io_wait, entry, link);
	return 0;
}

struct thread *
bdev_io_get_thread(struct bdev_io *io)
{
	return io->internal.ch->thread;
}

/*
 * Reset: freeze every channel (new I/O is aborted, NOMEM-queued I/O is
 * aborted), reset the module, unfreeze, complete.
 */

static void
reset_freeze_channel(struct io_channel_iter *i)
{
	struct bdev_channel *ch = io_channel_get_ctx(io_channel_iter_get_channel(i));
	struct bdev_io_tailq aborted;
	struct bdev_io *io;
	uint64_t now = ticks_get();

	ch->resets++;
	TAILQ_INIT(&aborted);
	TAILQ_CONCAT(&aborted, &ch->nomem_ios, internal.link);
	poller_unregister(&ch->nomem_poller);
	while ((io = TAILQ_FIRST(&aborted)) != NULL) {
		TAILQ_REMOVE(&aborted, io, internal.link);
		io->internal.status = BDEV_IO_STATUS_ABORTED;
		bdev_io_finish(ch, io, now);
	}
	io_channel_iter_continue(i, 0);
}

static void
reset_freeze_done(struct io_channel_iter *i, int status)
{
	struct bdev_io *io = io_channel_iter_get_ctx(i);
	bool in_submit = io->internal.in_submit;

	submit_to_module(io->internal.ch, io);
	/* Still inside bdev_reset() if the walk ran synchronously. */
	io->internal.in_submit = in_submit;
}

static void
reset_unfreeze_channel(struct io_channel_iter *i)
{
	struct bdev_channel *ch = io_channel_get_ctx(io_channel_iter_get_channel(i));

	/* A channel created after the freeze walk passed never saw the increment. */
	if (ch->resets > 0) {
		ch->resets--;
	}
	io_channel_iter_continue(i, 0);
}

static void
reset_unfreeze_done(struct io_channel_iter *i, int status)
{
	struct bdev_io *io = io_channel_iter_get_ctx(i);

	bdev_io_finish(io->internal.ch, io, ticks_get());
}

static void
reset_unfreeze(struct bdev_io *io)
{
	io_device_for_each_channel(io->bdev, reset_unfreeze_channel, io, reset_unfreeze_done);
}

int
bdev_reset(struct bdev_desc *desc, struct io_channel *_ch, bdev_io_completion_cb cb, void *cb_arg)
{
	struct bdev *bdev = desc->bdev;
	struct bdev_channel *ch = io_channel_get_ctx(_ch);
	struct bdev_io *io;

	if (__atomic_load_n(&bdev->internal->state, __ATOMIC_RELAXED) != BDEV_STATE_READY) {
		return -ENODEV;
	}
	if (!bdev->fn_table->io_type_supported(bdev->ctxt, BDEV_IO_TYPE_RESET)) {
		return -ENOTSUP;
	}
	io = bdev_io_get(desc, ch, BDEV_IO_TYPE_RESET, 0, 0, cb, cb_arg);
	if (io == NULL) {
		return -ENOMEM;
	}
	io->internal.submit_ticks = ticks_get();
	DEBUGLOG(bdev, "bdev %s: reset\n", bdev->name);
	/* The walks are asynchronous; in_submit covers a thread library that runs them inline. */
	io->internal.in_submit = true;
	io_device_for_each_channel(bdev, reset_freeze_channel, io, reset_freeze_done);
	io->internal.in_submit = false;
	return 0;
}

/*
 * Status mapping: the one place where bdev statuses, NVMe statuses and errnos meet.
 */

void
bdev_io_get_nvme_status(const struct bdev_io *io, int *sct, int *sc)
{
	switch (io->internal.status) {
	case BDEV_IO_STATUS_SUCCESS:
		*sct = NVME_SCT_GENERIC;
		*sc = NVME_SC_SUCCESS;
		break;
	case BDEV_IO_STATUS_NVME_ERROR:
		*sct = io->internal.nvme_sct;
		*sc = io->internal.nvme_sc;
		break;
	case BDEV_IO_STATUS_ABORTED:
		*sct = NVME_SCT_GENERIC;
		*sc = NVME_SC_ABORTED_BY_REQUEST;
		break;
	default:
		*sct = NVME_SCT_GENERIC;
		*sc = NVME_SC_INTERNAL_DEVICE_ERROR;
		break;
	}
}

static int
nvme_status_to_errno(int sct, int sc)
{
	if (sct == NVME_SCT_GENERIC) {
		switch (sc) {
		case NVME_SC_SUCCESS:
			return 0;
		case NVME_SC_INVALID_OPCODE:
			return -ENOTSUP;
		case NVME_SC_INVALID_FIELD:
			return -EINVAL;
		case NVME_SC_ABORTED_BY_REQUEST:
		case NVME_SC_ABORTED_SQ_DELETION:
			return -ECANCELED;
		case NVME_SC_LBA_OUT_OF_RANGE:
			return -ERANGE;
		case NVME_SC_CAPACITY_EXCEEDED:
			return -ENOSPC;
		case NVME_SC_NAMESPACE_NOT_READY:
			return -EAGAIN;
		case NVME_SC_RESERVATION_CONFLICT:
			return -EBADE;
		default:
			return -EIO;
		}
	}
	if (sct == NVME_SCT_MEDIA_ERROR && sc == NVME_SC_ACCESS_DENIED) {
		return -EACCES;
	}
	if (sct == NVME_SCT_PATH) {
		return -ENXIO;
	}
	return -EIO;
}

int
bdev_io_get_errno(const struct bdev_io *io)
{
	switch (io->internal.status) {
	case BDEV_IO_STATUS_SUCCESS:
		return 0;
	case BDEV_IO_STATUS_ABORTED:
		return -ECANCELED;
	case BDEV_IO_STATUS_NOMEM:
		return -ENOMEM;
	case BDEV_IO_STATUS_NVME_ERROR:
		return nvme_status_to_errno(io->internal.nvme_sct, io->internal.nvme_sc);
	default:
		return -EIO;
	}
}

/*
 * Statistics across channels.
 */

struct iostat_ctx {
	struct bdev *bdev;
	struct bdev_io_stat *stat;
	bdev_get_iostat_cb cb;
	void *cb_arg;
};

static void
iostat_channel(struct io_channel_iter *i)
{
	struct iostat_ctx *ctx = io_channel_iter_get_ctx(i);
	struct bdev_channel *ch = io_channel_get_ctx(io_channel_iter_get_channel(i));

	bdev_io_stat_add(ctx->stat, &ch->stat);
	io_channel_iter_continue(i, 0);
}

static void
iostat_done(struct io_channel_iter *i, int status)
{
	struct iostat_ctx *ctx = io_channel_iter_get_ctx(i);

	ctx->cb(ctx->bdev, ctx->stat, ctx->cb_arg, status);
	free(ctx);
}

void
bdev_get_iostat(struct bdev *bdev, struct bdev_io_stat *stat, bdev_get_iostat_cb cb, void *cb_arg)
{
	struct bdev_internal *internal = bdev->internal;
	struct iostat_ctx *ctx;

	ctx = calloc(1, sizeof(*ctx));
	if (ctx == NULL) {
		cb(bdev, stat, cb_arg, -ENOMEM);
		return;
	}
	ctx->bdev = bdev;
	ctx->stat = stat;
	ctx->cb = cb;
	ctx->cb_arg = cb_arg;

	/* Channels that are gone first; live ones are visited on their threads. */
	pthread_mutex_lock(&internal->stat_mutex);
	*stat = internal->stat_gone;
	pthread_mutex_unlock(&internal->stat_mutex);
	io_device_for_each_channel(bdev, iostat_channel, ctx, iostat_done);
}
